// @ts-check
// Overview: run progress, queue health, throughput over time (the metrics store's per-batch
// statistics by wall-clock time), and why no batch can be formed.
import { api } from "../api.js";
import { createChart } from "../charts.js";
import { $, h, kpi, pill, setChildren, setText } from "../dom.js";
import { fmtAgo, fmtDuration, fmtInt, fmtMs, fmtNum, fmtRate, fmtTime } from "../format.js";
import { card, changeTracker, scroller, table, td } from "../page.js";
import { hashFor } from "../router.js";

const WINDOW_MINUTES = 15;
const EVENTS_SHOWN = 10;
const BUCKET_S = 10;
/** Waiting this long for a batch is a problem; shorter waits are normal between batches. */
export const BLOCKED_WARN_AFTER_MS = 10_000;

/**
 * How to show why no batch can be formed: nothing while one can, a neutral note while the wait
 * is short, a warning once it has lasted BLOCKED_WARN_AFTER_MS (server time, across polls).
 * @param {string | null} reason
 * @param {number | null} since when the current wait began (ms), null if none
 * @param {number} now
 * @returns {{ level: "none" | "waiting" | "warn", since: number | null }}
 */
export function blockedState(reason, since, now) {
  if (!reason) return { level: "none", since: null };
  const began = since ?? now;
  return { level: now - began >= BLOCKED_WARN_AFTER_MS ? "warn" : "waiting", since: began };
}

/**
 * Per-second rates on a dense grid covering the whole window, so idle periods show as zero and
 * the x axis always spans the same minutes. Points are re-bucketed by their timestamp, which
 * also tolerates a server that returns finer-grained points than asked for.
 * @param {import("../api.js").TimeSeries} series
 * @param {number} now server time (ms)
 */
export function bucketize(series, now) {
  const bucketS = series.bucket_s > 0 ? series.bucket_s : BUCKET_S;
  const bucketMs = bucketS * 1000;
  const last = Math.floor(now / bucketMs);
  const first = last - Math.ceil((WINDOW_MINUTES * 60) / bucketS) + 1;
  const n = last - first + 1;
  const rows = {
    t: Array.from({ length: n }, (_, i) => ((first + i) * bucketMs) / 1000),
    ingestGroups: new Array(n).fill(0),
    ingestSequences: new Array(n).fill(0),
    deliveredBatches: new Array(n).fill(0),
    deliveredSequences: new Array(n).fill(0),
  };
  for (const p of series.points) {
    const i = Math.floor(p.t / bucketMs) - first;
    if (i < 0 || i >= n) continue;
    rows.ingestGroups[i] += p.ingest_groups / bucketS;
    rows.ingestSequences[i] += p.ingest_sequences / bucketS;
    rows.deliveredBatches[i] += p.delivered_batches / bucketS;
    rows.deliveredSequences[i] += p.delivered_sequences / bucketS;
  }
  return rows;
}

/** @type {import("../page.js").PageFactory} */
export function mountOverview(root) {
  const blocked = h(
    "div",
    { role: "status", "data-testid": "blocked-reason", "data-level": "none", hidden: true },
    h("strong", { "data-field": "blocked_title" }),
    h("span", { "data-field": "blocked_reason" }),
  );
  /** @type {number | null} */
  let blockedSince = null;
  const progress = h(
    "div",
    { class: "kpi-grid" },
    kpi("step", "Trainer step"),
    kpi("policy_version", "Policy version"),
    kpi("batch_size", "Batch size", "sequences per batch"),
    kpi("registered", "Trainer"),
    kpi("leases_outstanding", "Leases outstanding"),
    kpi("leases_expired", "Leases expired", "redelivered on expiry"),
  );
  const queue = h(
    "div",
    { class: "kpi-grid" },
    kpi("queue_groups", "Queued groups"),
    kpi("queue_sequences", "Queued sequences"),
    kpi("buffered_groups", "Buffered groups", "waiting to complete a group"),
    kpi("stale_groups", "Stale groups", "too old for a lease's max_staleness"),
    kpi("oldest_queued_age", "Oldest queued"),
    kpi("queued_policy_versions", "Queued policy versions"),
    kpi("dead_letters", "Dead letters"),
  );
  const throughput = h(
    "div",
    { class: "kpi-grid" },
    kpi("ingest_groups_per_s", "Ingest groups"),
    kpi("ingest_sequences_per_s", "Ingest sequences"),
    kpi("delivered_batches_per_s", "Delivered batches"),
    kpi("delivered_sequences_per_s", "Delivered sequences"),
    kpi("formation_p50", "Batch formation p50"),
    kpi("formation_p99", "Batch formation p99"),
  );
  const ingestChart = h("div", {
    class: "chart",
    role: "img",
    "aria-label": "Ingest rate over time",
  });
  const deliveryChart = h("div", {
    class: "chart",
    role: "img",
    "aria-label": "Delivery rate over time",
  });
  const byEnv = table("Queue depth per environment", [
    "Environment",
    { label: "Groups", numeric: true },
    { label: "Sequences", numeric: true },
    { label: "Share", numeric: true },
  ]);
  byEnv.el.dataset.testid = "queue-by-env";
  const deadLetters = h("ul", { class: "plain-list", "data-testid": "dead-letters" });
  const runEvents = h("ul", { class: "plain-list", "data-testid": "run-events" });

  setChildren(
    root,
    h("h1", { class: "page-title" }, "Overview"),
    blocked,
    card("Progress", [progress]),
    card("Queue", [queue]),
    card("Throughput", [
      throughput,
      h("p", { class: "muted small", "data-field": "rates_window" }),
      h(
        "div",
        { class: "chart-grid" },
        h(
          "figure",
          null,
          h("figcaption", null, "Ingest (per second, counted when the next batch forms)"),
          ingestChart,
        ),
        h("figure", null, h("figcaption", null, "Delivery (per second)"), deliveryChart),
      ),
    ]),
    h(
      "div",
      { class: "two-col" },
      card("Queue depth per env", [scroller(byEnv.el, "Queue depth per environment")]),
      card("Dead letters", [deadLetters]),
    ),
    card("Run events", [
      h(
        "p",
        { class: "muted small" },
        "Regressions found by the regression guard and the action it took.",
      ),
      runEvents,
    ]),
  );

  const ingest = createChart(ingestChart, {
    series: [{ label: "groups/s" }, { label: "sequences/s" }],
  });
  const delivery = createChart(deliveryChart, {
    series: [
      { label: "batches/s", color: "#059669" },
      { label: "sequences/s", color: "#7c3aed" },
    ],
  });
  const byEnvChanged = changeTracker();
  const deadChanged = changeTracker();
  const eventsChanged = changeTracker();

  /** @param {string} key @param {string | number} value */
  const set = (key, value) => setText(root.querySelector(`[data-kpi="${key}"]`), value);
  /** @param {string} key @param {string} value */
  const hint = (key, value) => {
    const card = root.querySelector(`[data-kpi-card="${key}"]`);
    if (!card) return;
    let el = card.querySelector(".kpi-hint");
    if (!el) el = card.appendChild(h("div", { class: "kpi-hint" }));
    setText(el, value);
  };

  return {
    title: "Overview",
    poll: true,
    async refresh({ run, signal }) {
      const [stats, series, events] = await Promise.all([
        api.stats(run, signal),
        api.timeseries(run, { minutes: WINDOW_MINUTES, bucket_s: BUCKET_S }, signal),
        api.events(run, EVENTS_SHOWN, signal),
      ]);

      const wait = blockedState(stats.blocked_reason, blockedSince, stats.now);
      blockedSince = wait.since;
      blocked.hidden = wait.level === "none";
      blocked.dataset.level = wait.level;
      blocked.className = wait.level === "warn" ? "banner banner-warn" : "blocked-wait muted";
      setText(
        $(blocked, "[data-field=blocked_title]"),
        wait.level === "warn"
          ? `No batch can be formed for ${fmtDuration((stats.now - (wait.since ?? stats.now)) / 1000)}: `
          : "Waiting for the next batch: ",
      );
      setText($(blocked, "[data-field=blocked_reason]"), stats.blocked_reason ?? "");

      set("step", fmtInt(stats.step));
      set("policy_version", fmtInt(stats.policy_version));
      set("batch_size", fmtInt(stats.batch_size));
      set("registered", stats.registered ? "Registered" : "Not registered");
      hint("registered", `max token length ${fmtInt(stats.max_token_len)}`);
      set("leases_outstanding", fmtInt(stats.leases.outstanding));
      set("leases_expired", fmtInt(stats.leases.expired));

      set("queue_groups", fmtInt(stats.queue.groups));
      set("queue_sequences", fmtInt(stats.queue.sequences));
      set("buffered_groups", fmtInt(stats.queue.buffered_groups));
      set("stale_groups", fmtInt(stats.queue.stale_groups));
      hint("buffered_groups", `${fmtInt(stats.queue.buffered_sequences)} sequences`);
      set("oldest_queued_age", fmtDuration(stats.queue.oldest_queued_age_s));
      hint(
        "oldest_queued_age",
        stats.queue.oldest_queued_at === null
          ? "queue empty"
          : fmtTime(stats.queue.oldest_queued_at),
      );
      const pv = stats.policy_versions;
      set(
        "queued_policy_versions",
        pv.queued_min === null
          ? "–"
          : pv.queued_min === pv.queued_max
            ? fmtInt(pv.queued_min)
            : `${fmtInt(pv.queued_min)}–${fmtInt(pv.queued_max)}`,
      );
      hint(
        "queued_policy_versions",
        pv.queued_min === null
          ? "none queued"
          : `max staleness ${fmtInt(pv.current - pv.queued_min)}`,
      );
      set("dead_letters", fmtInt(stats.dead_letters.count));

      const rates = stats.rates;
      set("ingest_groups_per_s", fmtRate(rates.ingest_groups_per_s));
      set("ingest_sequences_per_s", fmtRate(rates.ingest_sequences_per_s));
      set("delivered_batches_per_s", fmtRate(rates.delivered_batches_per_s));
      set("delivered_sequences_per_s", fmtRate(rates.delivered_sequences_per_s));
      set("formation_p50", fmtMs(stats.batch_formation.p50_ms));
      set("formation_p99", fmtMs(stats.batch_formation.p99_ms));
      hint(
        "formation_p99",
        `${fmtInt(stats.batch_formation.samples)} samples, last ${fmtMs(stats.batch_formation.last_ms)}`,
      );
      setText(
        root.querySelector("[data-field=rates_window]"),
        `Rates averaged over the last ${fmtDuration(rates.window_s)}; charts show each batch's statistics from the metrics store over ${WINDOW_MINUTES} minutes in ${series.bucket_s} s buckets.`,
      );

      const rows = bucketize(series, stats.now);
      ingest.update([rows.t, rows.ingestGroups, rows.ingestSequences]);
      delivery.update([rows.t, rows.deliveredBatches, rows.deliveredSequences]);

      if (byEnvChanged(stats.queue.by_env)) {
        const total = stats.queue.by_env.reduce((sum, row) => sum + row.sequences, 0);
        setChildren(
          byEnv.tbody,
          stats.queue.by_env.length === 0
            ? h("tr", null, h("td", { colspan: 4, class: "muted" }, "Queue is empty."))
            : stats.queue.by_env.map((row) =>
                h(
                  "tr",
                  { "data-env-id": row.env_id ?? "none" },
                  td(
                    row.env_id === null
                      ? h("span", { class: "muted" }, "(no env id)")
                      : h(
                          "a",
                          { href: hashFor("rollouts", { env_id: row.env_id, status: "queued" }) },
                          row.name ?? `env ${row.env_id}`,
                        ),
                  ),
                  td(fmtInt(row.groups), { numeric: true, field: "groups" }),
                  td(fmtInt(row.sequences), { numeric: true, field: "sequences" }),
                  td(total > 0 ? `${fmtNum((100 * row.sequences) / total, 1)}%` : "–", {
                    numeric: true,
                  }),
                ),
              ),
        );
      }

      if (eventsChanged(events.events)) {
        setChildren(
          runEvents,
          events.events.length === 0
            ? h("li", { class: "muted" }, "None.")
            : events.events.map((e) =>
                h(
                  "li",
                  { class: "run-event", "data-kind": e.kind },
                  pill(e.kind, e.kind === "regression" ? "warn" : "muted"),
                  " ",
                  h(
                    "time",
                    { datetime: new Date(e.created_at).toISOString() },
                    fmtAgo(e.created_at, stats.now),
                  ),
                  h("div", null, e.message),
                ),
              ),
        );
      }

      if (deadChanged(stats.dead_letters)) {
        setChildren(
          deadLetters,
          stats.dead_letters.recent.length === 0
            ? h("li", { class: "muted" }, "None. Items that failed all retries appear here.")
            : stats.dead_letters.recent.map((d) =>
                h(
                  "li",
                  { class: "dead-letter" },
                  h(
                    "div",
                    { class: "dead-letter-meta" },
                    pill(d.env_id === null ? "no env" : `env ${d.env_id}`, "bad"),
                    h(
                      "time",
                      { datetime: new Date(d.created_at).toISOString() },
                      fmtAgo(d.created_at, stats.now),
                    ),
                  ),
                  h("pre", { class: "dead-letter-error" }, d.error),
                ),
              ),
        );
      }
    },
    destroy() {
      ingest.destroy();
      delivery.destroy();
    },
  };
}
