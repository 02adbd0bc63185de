// @ts-check
// The run's registered tasks (GET /v1/runs/{run}/tasks): each task type contributors submit
// trajectories for, with groups submitted and mean score overall and per contributor.
import { h, setChildren } from "../dom.js";
import { fmtInt, fmtNum, shortId } from "../format.js";
import { card, changeTracker, scroller, table, td } from "../page.js";

/** @param {string | null} id @param {string | null} name */
function who(id, name) {
  if (id === null) return h("span", { class: "muted" }, "admin / open API");
  return h("span", { title: id }, name ?? shortId(id));
}

/** @param {import("../api.js").TaskInfo} task */
function taskRows(task) {
  const head = h(
    "tr",
    { "data-task": task.name },
    td(h("strong", null, task.name), { field: "name" }),
    td(task.difficulty === null ? "–" : fmtInt(task.difficulty), {
      numeric: true,
      field: "difficulty",
    }),
    td(task.required_tools.join(", ") || "–", { field: "required_tools" }),
    td(who(task.registered_by, task.registered_by_name), { field: "registered_by" }),
    td(fmtInt(task.groups), { numeric: true, field: "groups" }),
    td(fmtNum(task.mean_score), { numeric: true, field: "mean_score" }),
  );
  if (task.description) head.title = task.description;
  const lines = task.contributors.map((c) =>
    h(
      "tr",
      { class: "muted", "data-task": task.name, "data-contributor": c.token_id ?? "" },
      td(""),
      td(""),
      td(""),
      td(["↳ ", who(c.token_id, c.token_name)], { field: "contributor" }),
      td(fmtInt(c.groups), { numeric: true, field: "groups" }),
      td(fmtNum(c.mean_score), { numeric: true, field: "mean_score" }),
    ),
  );
  return [head, ...lines];
}

/** A card listing the run's tasks; hidden while the run has none. */
export function tasksCard() {
  const summary = table("Registered tasks", [
    "Task",
    { label: "Difficulty", numeric: true },
    "Tools",
    "Registered by / contributor",
    { label: "Groups", numeric: true },
    { label: "Mean score", numeric: true },
  ]);
  summary.el.dataset.testid = "tasks-table";
  const el = card(
    "Contributed tasks",
    [
      h(
        "p",
        { class: "muted small" },
        "Task types contributors registered (POST /v1/runs/{run}/tasks) and the groups their proxy sessions submitted.",
      ),
      scroller(summary.el, "Contributed tasks"),
    ],
    { hidden: true },
  );
  const changed = changeTracker();
  return {
    el,
    /** @param {import("../api.js").TaskList} list */
    update(list) {
      el.hidden = list.tasks.length === 0;
      if (changed(list.tasks)) setChildren(summary.tbody, list.tasks.flatMap(taskRows));
    },
  };
}
