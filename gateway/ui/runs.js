// runs.js: the Runs pages — the list with each run's status (searched,
// filtered, sorted and paged by the gateway), and one run's DAG drawn as SVG
// from the server's layout (/api/runs/{id}/graph) beside its timeline, each
// step coloured by its state as the run's events arrive (a legend says
// which colour is which), with the chosen step's inputs, outputs, timing
// and error, and for a step that waits for a person what it acts on and
// its buttons; an ended run can be forked from the chosen step.
"use strict";

(function () {
  const h = AM.h;

  // runStatuses are what the runs list filters on (GET /api/runs?status=).
  const runStatuses = ["running", "waiting", "completed", "failed", "cancelled"];

  AM.pages.runs = async function (main, params) {
    const view = AM.listView({
      id: "runs", path: "/api/runs", page: "runs", params, noun: "run", searchHint: "pipeline name",
      filters: { status: runStatuses, agents: true },
      empty: "No run yet: submit a pipeline, or run one with agentmesh run.",
      row: (r) => ({ "data-run": r.id, "data-status": r.status }),
      columns: [
        { label: "run", sort: "id", cell: (r) => h("a", { href: "#/runs/" + encodeURIComponent(r.id) }, r.id) },
        { label: "pipeline", sort: "name", cell: (r) => r.name ? h("button", { type: "button", class: "link", title: "only runs of " + r.name,
          "data-name": r.name, onclick: () => view.set("name", r.name) }, r.name) : "" },
        { label: "status", sort: "status", cell: (r) => h("span", { class: "state-chip s-" + r.status, title: r.error || "" }, r.status) },
        { label: "steps", sort: "steps", cell: stepCount },
        { label: "agents", narrow: false, cell: (r) => (r.agents || []).join(", "), attrs: () => ({ class: "clip agents-cell" }) },
        { label: "started", sort: "created_at", cell: (r) => h("span", { title: AM.when(r.created_at) }, AM.ago(r.created_at)) },
        { label: "took", sort: "duration_ms", narrow: false, cell: (r) => r.finished_at ? AM.ms(new Date(r.finished_at) - new Date(r.created_at)) : "–" },
      ],
    });
    AM.clear(main, h("h1", {}, "Runs ", h("a", { class: "button", href: "#/submit" }, "Submit a pipeline")), view.el);
    const redraw = AM.debounce(view.draw, 200);
    AM.follow("/api/events", (type) => { if (type.includes("pipeline") || type.includes("run")) redraw(); }, redraw);
    await view.draw();
  };

  // stepCount says how far a run got: "2/3 steps", with failures, skips and
  // the steps waiting for a person.
  function stepCount(r) {
    if (typeof r.steps === "number") {
      const parts = [(r.completed ?? 0) + "/" + AM.plural(r.steps, "step")];
      if (r.failed) parts.push(r.failed + " failed");
      if (r.skipped) parts.push(r.skipped + " skipped");
      const waiting = Object.keys(r.waiting || {});
      if (waiting.length) parts.push("waiting: " + waiting.join(", "));
      return parts.join(" · ");
    }
    const all = Object.values(r.steps || {});
    return all.filter((s) => s.status === "completed").length + "/" + all.length;
  }

  AM.pages.run = async function (main, params) {
    const id = params.id;
    const head = h("div", { class: "run-head" });
    const dag = h("div", { class: "dag", id: "dag" }, h("p", { class: "muted" }, "laying out…"));
    const timeline = h("div", { class: "timeline", id: "timeline" });
    const panel = h("aside", { class: "step-panel", id: "step-panel" }, h("p", { class: "muted" }, "Click a step for its inputs, outputs, timing and error."));
    const budget = h("div", { id: "budget-panel" });
    AM.clear(main, h("h1", {}, h("a", { href: "#/runs" }, "Runs"), " / ", id), head, budget, legend(),
      h("div", { class: "run-grid" },
        h("section", { class: "card dag-card" }, h("h2", {}, "Steps"), dag),
        h("section", { class: "card timeline-card" }, h("h2", {}, "Timeline"), timeline),
        panel));
    const view = { id, run: null, selected: params.step || "", dag, timeline, panel, head };
    const reload = async () => {
      try {
        const [run, graph] = await Promise.all([
          AM.api("GET", "/api/runs/" + encodeURIComponent(id)),
          AM.api("GET", "/api/runs/" + encodeURIComponent(id) + "/graph"),
        ]);
        view.run = run;
        drawHead(view);
        AM.clear(budget, AM.runBudget(run));
        AM.clear(dag, drawGraph(graph, view));
        applyStates(view);
        drawTimeline(view);
        if (view.selected) showStep(view, view.selected);
      } catch (e) {
        AM.clear(dag, AM.error(e));
      }
    };
    const refetch = AM.debounce(reload, 250);
    AM.follow("/api/runs/" + encodeURIComponent(id) + "/events?deltas=0", (type, data) => {
      const d = data || {};
      if (d.step) {
        // paint at once; the full record (outputs, timing) follows the refetch
        const status = d.status || type.split(".").pop();
        setNodeState(dag, d.step, status);
        if (view.run && view.run.steps && view.run.steps[d.step]) view.run.steps[d.step].status = status;
      }
      if (type.endsWith("pipeline.completed") && view.run) view.run.status = d.status || "completed";
      refetch();
    }, refetch);
    // a run under way: its timeline's open bars grow with the clock
    const tick = setInterval(() => { if (view.run && view.run.status === "running") drawTimeline(view); }, 1000);
    AM.onLeave(() => clearInterval(tick));
    await reload();
  };

  // legend says what each step colour means, in the DAG and the timeline.
  function legend() {
    const states = [["pending", "pending: not started"], ["running", "running"], ["waiting", "waiting for a person"],
      ["completed", "completed"], ["failed", "failed"], ["skipped", "skipped: a step it needs did not complete"]];
    return h("div", { class: "legend", id: "legend", role: "list", "aria-label": "legend" },
      states.map(([s, text]) => h("span", { class: "legend-item", role: "listitem", "data-state": s }, h("span", { class: "swatch s-" + s }), text)),
      h("span", { class: "legend-item", role: "listitem", "data-bar": "wait" }, h("span", { class: "swatch bar wait" }), "queue wait"),
      h("span", { class: "legend-item", role: "listitem", "data-bar": "run" }, h("span", { class: "swatch bar run" }), "run time"));
  }

  function drawTimeline(view) {
    AM.clear(view.timeline, AM.timeline(view.run, (step) => showStep(view, step), view.selected));
  }

  function drawHead(view) {
    const r = view.run;
    const cancel = r.status === "running" ? h("button", { class: "danger", onclick: async (e) => {
      e.target.disabled = true;
      try { await AM.api("POST", "/api/runs/" + encodeURIComponent(view.id) + "/cancel"); } catch (err) { view.head.append(AM.error(err)); }
    } }, "Cancel run") : "";
    // an ended run can be run again whole, from its spec (with the vars it
    // ran with); a fork from one step is the step panel's
    const rerun = r.status !== "running" && r.spec ? h("button", { id: "rerun-button", type: "button", onclick: async (e) => {
      e.target.disabled = true;
      try {
        const acc = await AM.api("POST", "/api/pipelines", JSON.stringify(r.spec), "application/json");
        location.hash = "#/runs/" + encodeURIComponent(acc.run_id);
      } catch (err) { e.target.disabled = false; view.head.append(AM.error(err)); }
    } }, "Re-run") : "";
    AM.clear(view.head,
      h("span", { class: "state-chip s-" + r.status, id: "run-status", "data-status": r.status }, r.status),
      " ", r.name || (r.spec && r.spec.name) || "", " · started ", AM.when(r.created_at),
      r.finished_at ? " · took " + AM.ms(new Date(r.finished_at) - new Date(r.created_at)) : "",
      " ", cancel, rerun, origin(r), r.error ? AM.error({ code: r.code, message: r.error }) : "");
  }

  // origin links a forked run to the run and step it was forked from.
  function origin(r) {
    const o = r.origin;
    if (!o) return "";
    return h("div", { class: "muted", id: "run-origin" }, "forked from run ",
      h("a", { href: "#/runs/" + encodeURIComponent(o.run) + "?step=" + encodeURIComponent(o.step) }, o.run), " at step " + o.step);
  }

  // drawGraph draws the laid-out DAG: boxes at the server's positions, edges
  // as the server's Bézier splines with an arrowhead.
  function drawGraph(g, view) {
    const pad = 8;
    const svg = h("svg:svg", { viewBox: [-pad, -pad, g.width + 2 * pad, g.height + 2 * pad].join(" "),
      width: g.width + 2 * pad, height: g.height + 2 * pad, role: "img", "aria-label": "pipeline steps by wave" },
      h("svg:defs", {}, h("svg:marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse" },
        h("svg:path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }))));
    for (const e of g.edges || []) {
      const p = e.points || [];
      if (!p.length) continue;
      let d = "M " + p[0].join(" ");
      for (let i = 1; i + 2 < p.length; i += 3) d += " C " + p[i].join(" ") + " " + p[i + 1].join(" ") + " " + p[i + 2].join(" ");
      if (e.arrow) d += " L " + e.arrow.join(" ");
      svg.append(h("svg:path", { d, class: "edge", "marker-end": "url(#arrow)", "data-from": e.from, "data-to": e.to }));
    }
    for (const n of g.nodes || []) {
      const sub = n.kind && n.kind !== "agent" ? n.kind : n.agent || "";
      svg.append(h("svg:g", { class: "node s-" + n.state, "data-step": n.id, "data-state": n.state, tabindex: 0,
        transform: "translate(" + n.x + " " + n.y + ")",
        onclick: () => showStep(view, n.id), onkeydown: (ev) => { if (ev.key === "Enter") showStep(view, n.id); } },
      h("svg:title", {}, n.id + " (" + (n.agent || n.kind) + "): " + n.state),
      h("svg:rect", { width: n.w, height: n.h, rx: 8 }),
      h("svg:text", { x: n.w / 2, y: 19, class: "step-id" }, n.id),
      h("svg:text", { x: n.w / 2, y: 35, class: "step-sub" }, sub)));
    }
    return svg;
  }

  function applyStates(view) {
    const steps = (view.run && view.run.steps) || {};
    for (const s of stepList(steps)) setNodeState(view.dag, s.id, s.status);
  }

  const stepList = (steps) => (Array.isArray(steps) ? steps : Object.values(steps || {}));

  function setNodeState(dag, step, status) {
    const g = dag.querySelector('g.node[data-step="' + CSS.escape(step) + '"]');
    if (!g || !status) return;
    g.setAttribute("class", "node s-" + status + (g.classList.contains("selected") ? " selected" : ""));
    g.setAttribute("data-state", status);
    const title = g.querySelector("title");
    if (title) title.textContent = title.textContent.replace(/: [a-z_]+$/, ": " + status);
  }

  function stepOf(run, id) {
    return stepList(run && run.steps).find((s) => s.id === id) || null;
  }

  function showStep(view, id) {
    view.selected = id;
    for (const g of view.dag.querySelectorAll("g.node")) g.classList.toggle("selected", g.dataset.step === id);
    for (const row of view.timeline.querySelectorAll(".gantt-row")) row.classList.toggle("selected", row.dataset.step === id);
    const s = stepOf(view.run, id);
    const spec = ((view.run && view.run.spec && view.run.spec.steps) || []).find((x) => x.id === id) || {};
    if (!s) return AM.clear(view.panel, h("h2", {}, id), h("p", { class: "muted" }, "No record of this step yet."));
    const took = s.duration_ms ?? (s.finished_at && s.dispatched_at ? new Date(s.finished_at) - new Date(s.dispatched_at) : undefined);
    AM.clear(view.panel,
      h("h2", {}, id, " ", h("span", { class: "state-chip s-" + s.status }, s.status)),
      h("div", { class: "muted" }, (spec.kind || "agent") + (s.agent ? " · " + s.agent : "") + waveOf(s) + (s.attempt > 1 ? " · attempt " + s.attempt : "")),
      humanKinds.has(spec.kind) ? subject(view, id, spec) : "",
      waitingActions(view, s, spec),
      h("dl", { class: "timing" },
        h("dt", {}, "dispatched"), h("dd", {}, AM.when(s.dispatched_at)),
        h("dt", {}, "finished"), h("dd", {}, AM.when(s.finished_at)),
        h("dt", {}, "took"), h("dd", {}, AM.ms(took)),
        s.metrics && s.metrics.tokens ? [h("dt", {}, "tokens"), h("dd", {}, AM.tokens(s.metrics))] : ""),
      s.from ? h("p", { class: "muted", id: "step-kept" }, "kept from run ",
        h("a", { href: "#/runs/" + encodeURIComponent(s.from) + "?step=" + encodeURIComponent(id) }, s.from), ": this run sent it no task") : "",
      s.summary ? h("p", {}, s.summary) : "",
      s.reason ? h("p", { class: "muted" }, s.reason) : "",
      s.error ? AM.error({ code: s.code, message: s.error }) : "",
      h("h3", {}, "inputs"), s.inputs ? AM.values(s.inputs) : specInputs(spec),
      h("h3", {}, "outputs"), AM.values(s.outputs),
      spec.params ? [h("h3", {}, "params"), AM.json(spec.params)] : "",
      forkForm(view, id, spec));
  }

  // forkForm starts a new run from this one as it was before step id (POST
  // /api/runs/{id}/fork): the steps id does not lead to keep their outputs,
  // id and the steps after it run again, with the params edited here.
  function forkForm(view, id, spec) {
    if (!view.run || view.run.status === "running") return "";
    const before = spec.params || {};
    const params = h("textarea", { id: "fork-params", rows: 3, spellcheck: "false", "aria-label": "params of " + id + " (JSON)",
      value: JSON.stringify(before, null, 1) });
    const out = h("section", { class: "fork", id: "step-fork" });
    const go = async (e) => {
      const button = e.currentTarget;
      button.disabled = true;
      const body = { at: id, params: {} };
      try {
        const given = JSON.parse(params.value.trim() || "{}");
        if (!given || typeof given !== "object" || Array.isArray(given)) throw new Error("write them as a JSON object, such as {\"op\": \"lower\"}");
        for (const [k, v] of Object.entries(given)) if (JSON.stringify(v) !== JSON.stringify(before[k])) body.params[id + "." + k] = v;
        const acc = await AM.api("POST", "/api/runs/" + encodeURIComponent(view.id) + "/fork", body);
        location.hash = "#/runs/" + encodeURIComponent(acc.run_id);
      } catch (err) {
        button.disabled = false;
        out.append(AM.error(err instanceof SyntaxError ? { code: "invalid_params", message: "params of " + id + ": " + err.message } : err));
      }
    };
    return AM.append(out, [h("h3", {}, "fork from this step"),
      h("p", { class: "muted" }, "A new run of this pipeline: the steps " + id + " does not depend on keep their outputs (no task is sent), " +
        id + " and every step after it run again with these params. This run does not change."),
      params, h("button", { id: "fork-button", type: "button", onclick: go }, "Fork from " + id)]);
  }

  // waveOf numbers a step's wave from 1, as the CLI does.
  const waveOf = (s) => (typeof s.wave === "number" && s.wave >= 0 ? " · wave " + (s.wave + 1) : "");

  const humanKinds = new Set(["approval", "input"]);

  // subject is what a step that waits for a person acts on: the outputs of
  // the steps it depends on (without depends_on, those of the wave before
  // it) and the inputs its spec gives.
  function subject(view, id, spec) {
    const run = view.run || {};
    let parents = spec.depends_on || [];
    if (!parents.length) {
      const w = (run.waves || []).findIndex((ids) => ids.includes(id));
      parents = w > 0 ? run.waves[w - 1] : [];
    }
    const given = Object.keys(spec.inputs || {}).length;
    return h("section", { class: "subject", id: "step-subject" },
      h("h3", {}, spec.kind === "input" ? "asked about" : "subject: what is approved"),
      parents.map((p) => {
        const ps = stepOf(run, p);
        const outs = ps && ps.outputs && Object.keys(ps.outputs).length;
        return h("div", { class: "subject-from", "data-from": p },
          h("h4", {}, "from ", h("a", { href: "#/runs/" + encodeURIComponent(view.id) + "?step=" + encodeURIComponent(p) }, p), ps && ps.agent ? " (" + ps.agent + ")" : ""),
          outs ? AM.values(ps.outputs) : h("span", { class: "muted" }, ps ? (ps.status === "completed" ? "no outputs" : ps.status) : "not run yet"));
      }),
      given ? [h("h4", {}, "inputs given"), specInputs(spec)] : "",
      !parents.length && !given ? h("p", { class: "muted" }, "Nothing but the run going on: this step depends on no other.") : "");
  }

  function specInputs(spec) {
    const m = spec.inputs || {};
    if (!Object.keys(m).length) return h("span", { class: "muted" }, "filled from the parents' outputs by data type");
    return h("dl", { class: "values" }, Object.keys(m).sort().map((k) => [h("dt", {}, k), h("dd", {}, m[k])]));
  }

  // waitingActions are the buttons of an approval or input step waiting for
  // a person.
  function waitingActions(view, s, spec) {
    if (s.status !== "waiting") return "";
    const base = "/api/runs/" + encodeURIComponent(view.id) + "/steps/" + encodeURIComponent(s.id);
    const out = h("div", { class: "actions", id: "step-actions" });
    const post = async (path, body) => {
      for (const b of out.querySelectorAll("button")) b.disabled = true;
      try { await AM.api("POST", base + path, body); out.append(h("span", { class: "ok" }, " sent")); } catch (e) { out.append(AM.error(e)); }
    };
    const prompt = (spec.human && spec.human.prompt) || s.reason || "";
    if (spec.kind === "input") {
      const v = h("input", { id: "step-input", placeholder: "value" });
      AM.append(out, [h("p", {}, prompt), v, h("button", { onclick: () => post("/input", { value: v.value }) }, "Send")]);
    } else {
      const comment = h("input", { id: "step-comment", placeholder: "comment (optional)" });
      AM.append(out, [h("p", {}, prompt), comment,
        h("button", { class: "approve", onclick: () => post("/approve", { comment: comment.value }) }, "Approve"),
        h("button", { class: "danger", onclick: () => post("/approve", { reject: true, comment: comment.value }) }, "Reject")]);
    }
    return out;
  }
})();
