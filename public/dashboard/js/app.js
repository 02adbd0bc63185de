// @ts-check
// Dashboard shell: run selection, hash routing, the 2 s poll loop (paused while the tab is
// hidden), error banner and the token prompt on 401.
import { AuthRequiredError, api } from "./api.js";
import { clearToken, getToken, promptForToken } from "./auth.js";
import { h, setChildren, setText } from "./dom.js";
import { mountBatches } from "./pages/batches.js";
import { mountCurves } from "./pages/curves.js";
import { mountEnvs } from "./pages/envs.js";
import { mountOverview } from "./pages/overview.js";
import { mountRolloutDetail } from "./pages/rollout-detail.js";
import { mountRollouts } from "./pages/rollouts.js";
import { parseRoute } from "./router.js";

const POLL_MS = 2000;
const RUNS_EVERY_TICKS = 15;

/** @type {Record<string, import("./page.js").PageFactory>} */
const PAGES = {
  overview: mountOverview,
  curves: mountCurves,
  envs: mountEnvs,
  rollouts: mountRollouts,
  rollout: mountRolloutDetail,
  batches: mountBatches,
};
/** Nav entry highlighted for each route. */
/** @type {Record<string, string>} */
const NAV_FOR = { rollout: "rollouts" };

const main = /** @type {HTMLElement} */ (document.getElementById("main"));
const runSelect = /** @type {HTMLSelectElement} */ (document.getElementById("run-select"));
const liveStatus = /** @type {HTMLElement} */ (document.getElementById("live-status"));
const liveToggle = /** @type {HTMLButtonElement} */ (document.getElementById("live-toggle"));
const errorBanner = /** @type {HTMLElement} */ (document.getElementById("error-banner"));
const tokenButton = /** @type {HTMLButtonElement} */ (document.getElementById("token-button"));

/**
 * @typedef {{instance: import("./page.js").PageInstance, controller: AbortController,
 *   route: import("./router.js").Route}} Mounted
 */
/** @type {Mounted | null} */
let mounted = null;
let timer = 0;
let tick = 0;
let generation = 0;
let live = true;
let firstMount = true;

function currentRun() {
  return new URLSearchParams(location.search).get("run") || "default";
}

/** @param {string | null} message */
function showError(message) {
  errorBanner.hidden = !message;
  setText(errorBanner, message ?? "");
}

function schedule() {
  clearTimeout(timer);
  if (!live || document.hidden || !mounted?.instance.poll) return;
  timer = window.setTimeout(refreshNow, POLL_MS);
}

function updateLiveStatus() {
  if (!live) setText(liveStatus, "Paused");
  else if (document.hidden) setText(liveStatus, "Paused (tab hidden)");
}

async function refreshNow() {
  clearTimeout(timer);
  const target = mounted;
  if (!target) return;
  const myGeneration = ++generation;
  const ctx = {
    run: currentRun(),
    route: target.route,
    signal: target.controller.signal,
    tick: tick++,
    refreshNow: () => void refreshNow(),
  };
  try {
    if (ctx.tick % RUNS_EVERY_TICKS === 0) void loadRuns(target.controller.signal);
    await target.instance.refresh(ctx);
    if (target !== mounted) return;
    main.dataset.state = "ready";
    main.dataset.refreshes = String(Number(main.dataset.refreshes ?? 0) + 1);
    showError(null);
    const time = new Date().toLocaleTimeString("en-GB");
    setText(
      liveStatus,
      target.instance.poll && live ? `Live · updated ${time}` : `Updated ${time}`,
    );
  } catch (error) {
    if (target !== mounted || target.controller.signal.aborted) return;
    if (error instanceof AuthRequiredError) {
      const hadToken = getToken() !== null;
      if (hadToken) clearToken();
      setText(liveStatus, "Waiting for token");
      await promptForToken(hadToken ? "That token was rejected; enter a valid one." : undefined);
      tokenButton.hidden = false;
      void loadRuns(target.controller.signal);
      if (target === mounted) return refreshNow();
      return;
    }
    main.dataset.state = main.dataset.state === "ready" ? "ready" : "error";
    const message = error instanceof Error ? error.message : String(error);
    showError(
      `Could not load data for run "${ctx.run}": ${message}. Retrying every ${POLL_MS / 1000} s.`,
    );
    setText(liveStatus, "Error");
  } finally {
    if (myGeneration === generation && target === mounted) {
      schedule();
      updateLiveStatus();
    }
  }
}

/** @param {AbortSignal} signal */
async function loadRuns(signal) {
  try {
    const { runs } = await api.runs(signal);
    const names = new Set(runs.map((r) => r.name));
    const selected = currentRun();
    names.add(selected);
    const options = [...names].sort();
    if ([...runSelect.options].map((o) => o.value).join("\n") === options.join("\n")) return;
    setChildren(
      runSelect,
      options.map((name) => h("option", { value: name }, name)),
    );
    runSelect.value = selected;
  } catch {
    // The page's own request reports errors (and asks for a token); the selector keeps its list.
  }
}

function mountRoute() {
  const route = parseRoute(location.hash);
  if (route.name === "unknown" || location.hash === "" || location.hash === "#") {
    location.replace("#/overview");
    return;
  }
  if (mounted) {
    mounted.controller.abort();
    mounted.instance.destroy?.();
  }
  clearTimeout(timer);
  showError(null);
  main.dataset.state = "loading";
  main.dataset.refreshes = "0";
  main.dataset.route = route.name;
  const controller = new AbortController();
  const factory = PAGES[route.name] ?? mountOverview;
  main.replaceChildren();
  const instance = factory(main, {
    run: currentRun(),
    route,
    signal: controller.signal,
    tick,
    refreshNow: () => void refreshNow(),
  });
  mounted = { instance, controller, route };
  document.title = `${instance.title} · ${currentRun()} · atropos-edge`;
  const navName = NAV_FOR[route.name] ?? route.name;
  for (const link of document.querySelectorAll("[data-route]")) {
    if (link.getAttribute("data-route") === navName) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  // Move focus to the new content for keyboard and screen-reader users, but not on first load.
  if (!firstMount) main.focus({ preventScroll: false });
  firstMount = false;
  void refreshNow();
}

runSelect.addEventListener("change", () => {
  const url = new URL(location.href);
  url.searchParams.set("run", runSelect.value);
  // Route-specific state (a group id, cursors) belongs to the old run.
  const route = parseRoute(location.hash);
  url.hash =
    route.name === "rollout"
      ? "#/rollouts"
      : `#/${route.name === "unknown" ? "overview" : route.name}`;
  history.replaceState(null, "", url);
  mountRoute();
});

liveToggle.addEventListener("click", () => {
  live = !live;
  liveToggle.setAttribute("aria-pressed", String(live));
  setText(liveToggle, live ? "Live" : "Paused");
  if (live) void refreshNow();
  else {
    clearTimeout(timer);
    updateLiveStatus();
  }
});

tokenButton.addEventListener("click", async () => {
  clearToken();
  await promptForToken();
  void refreshNow();
});

document.addEventListener("visibilitychange", () => {
  if (document.hidden) {
    clearTimeout(timer);
    updateLiveStatus();
  } else if (live) void refreshNow();
});

window.addEventListener("hashchange", mountRoute);
runSelect.value = currentRun();
tokenButton.hidden = getToken() === null;
mountRoute();
