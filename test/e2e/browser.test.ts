/**
 * The browser the dashboard tests fall back to on a machine without Chromium: the one shipped in
 * the @sparticuz/chromium devDependency, checked here even where a system Chromium exists.
 */
import { describe, expect, it } from "vitest";
import { bundledFiles, launchChromium } from "./browser";

describe("bundled Chromium", () => {
  it("launches headless from the npm package and renders a page", async () => {
    if (process.platform !== "linux" || process.arch !== "x64") {
      // The package ships a Linux x64 build only; elsewhere discovery must not offer it.
      expect(bundledFiles()).toBeNull();
      return;
    }
    const started = Date.now();
    const browser = await launchChromium({
      env: { ...process.env, ATROPOS_EDGE_BROWSER: "bundled" },
    });
    try {
      expect(browser.browser.source.kind).toBe("bundled");
      expect(Date.now() - started).toBeLessThan(60_000);
      await browser.page.setContent(
        `<p id="n"></p><script>document.getElementById("n").textContent = (1234567).toLocaleString()</script>`,
      );
      expect(await browser.page.textContent("#n")).toBe("1,234,567");
      const shot = await browser.page.locator("#n").screenshot();
      expect(shot.length).toBeGreaterThan(100);
    } finally {
      await browser.close();
    }
  });
});
