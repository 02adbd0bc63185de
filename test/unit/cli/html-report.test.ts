import { describe, expect, it } from "vitest";
import { escapeHtml, renderGroupsReport } from "../../../src/cli/html-report";

describe("HTML report", () => {
  const evil = "</pre><script>alert('x')</script><img src=x onerror=alert(1)>";
  const html = renderGroupsReport(
    [
      {
        tokens: [[1, 2, 3]],
        masks: [[-100, 2, 3]],
        scores: [1],
        inference_logprobs: [[0, -0.5, -0.25]],
        messages: [[{ role: "assistant", content: evil }]],
      },
    ],
    { title: "<b>title</b>", decodeToken: (id) => (id === 2 ? "<script>" : `t${id}`) },
  );

  it("never emits model output as markup", () => {
    expect(html).not.toContain("<script");
    expect(html).not.toContain("<img");
    expect(html).toContain("&lt;/pre&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
    expect(html).toContain("&lt;script&gt;</span>");
    expect(html).toContain("<title>&lt;b&gt;title&lt;/b&gt;</title>");
  });

  it("shows masks and logprobs per token and forbids scripts by CSP", () => {
    expect(html).toContain('class="pr" title="id 1 · mask -100 · logprob 0.000"');
    expect(html).toContain('class="tr" title="id 3 · mask 3 · logprob -0.250"');
    expect(html).toContain("default-src 'none'");
  });

  it("escapes every HTML-significant character", () => {
    expect(escapeHtml(`&<>"'`)).toBe("&amp;&lt;&gt;&quot;&#39;");
  });
});
