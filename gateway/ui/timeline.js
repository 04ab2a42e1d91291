// timeline.js: a run's timeline, a Gantt chart of its steps beside the
// DAG: one row a step in wave order, on one time axis from the run's start,
// each bar split into the time its task waited in the queue (dispatched
// until the agent took it: what the agent reports it ran, metrics.duration_ms,
// subtracted from dispatch to finish) and the time it ran. A step that waits
// for a person shows that wait; one still going grows with the clock.
"use strict";

(function () {
  const h = AM.h;

  const humanKinds = new Set(["approval", "input"]);

  // stepOrder is every step of the run in wave order, then any the waves do
  // not name (a spec of the previous layout), in the spec's order.
  function stepOrder(run) {
    const ids = [].concat(...(run.waves || []));
    for (const s of (run.spec && run.spec.steps) || []) if (!ids.includes(s.id)) ids.push(s.id);
    for (const id of Object.keys(run.steps || {})) if (!ids.includes(id)) ids.push(id);
    return ids;
  }

  const time = (t) => {
    const n = t ? Date.parse(t) : NaN;
    return isNaN(n) || n <= 0 ? null : n;
  };

  // spans works out one step's bars: [{kind: wait|run|human|flight, from, to}]
  // in epoch ms, and a line saying how long each took.
  function spans(s, kind, now) {
    const d = time(s.dispatched_at);
    if (!d || s.status === "skipped" || s.status === "pending") return { bars: [], note: s.status === "skipped" ? "skipped" + (s.reason ? ": " + s.reason : "") : s.status || "pending" };
    const ended = time(s.finished_at);
    const f = ended || now;
    if (humanKinds.has(kind)) {
      return { bars: [{ kind: "human", from: d, to: f }], note: (ended ? "waited " : "waiting ") + AM.ms(f - d) + " for a person" };
    }
    const ran = s.metrics && s.metrics.duration_ms !== undefined ? Number(s.metrics.duration_ms) : s.duration_ms;
    if (!ended) return { bars: [{ kind: "flight", from: d, to: f }], note: "dispatched " + AM.ms(f - d) + " ago: queued or running" };
    if (ran === undefined || ran === null || isNaN(ran)) return { bars: [{ kind: "run", from: d, to: f }], note: "took " + AM.ms(f - d) };
    const start = Math.max(d, f - ran);
    return { bars: [{ kind: "wait", from: d, to: start }, { kind: "run", from: start, to: f }],
      note: "queued " + AM.ms(start - d) + " · ran " + AM.ms(f - start) };
  }

  // timeline draws run's Gantt chart; onSelect(step) is called when a row
  // is chosen, selected is the step chosen now.
  AM.timeline = function (run, onSelect, selected) {
    const now = Date.now();
    const t0 = time(run.created_at) || now;
    const specs = Object.fromEntries(((run.spec && run.spec.steps) || []).map((s) => [s.id, s]));
    const rows = stepOrder(run).map((id) => {
      const s = (run.steps || {})[id] || { id, status: "pending" };
      const kind = (specs[id] && specs[id].kind) || "agent";
      return { id, s, kind, ...spans(s, kind, now) };
    });
    let t1 = time(run.finished_at) || now;
    for (const r of rows) for (const b of r.bars) t1 = Math.max(t1, b.to);
    const span = Math.max(t1 - t0, 1);
    const pct = (t) => Math.min(100, Math.max(0, ((t - t0) / span) * 100));

    const axis = h("div", { class: "gantt-axis", "aria-hidden": "true" }, h("span", { class: "gantt-label" }),
      h("div", { class: "gantt-track" }, [0, 0.25, 0.5, 0.75, 1].map((x) => {
        const tick = h("span", { class: "tick" }, "+" + AM.ms(x * span));
        tick.style.left = x * 100 + "%";
        return tick;
      })));
    const body = rows.map((r) => {
      const track = h("div", { class: "gantt-track" });
      if (!r.bars.length) track.append(h("span", { class: "gantt-note" }, r.note));
      for (const b of r.bars) {
        const bar = h("span", { class: "bar " + b.kind + (b.kind === "run" ? " s-" + r.s.status : ""), "data-ms": Math.round(b.to - b.from) });
        // CSSOM, not a style attribute: the Content-Security-Policy allows it
        bar.style.left = pct(b.from) + "%";
        bar.style.width = Math.max(pct(b.to) - pct(b.from), 0) + "%";
        track.append(bar);
      }
      const choose = () => onSelect(r.id);
      return h("div", { class: "gantt-row" + (r.id === selected ? " selected" : ""), role: "row", tabindex: 0, "data-step": r.id, "data-state": r.s.status,
        title: r.id + ": " + r.note, onclick: choose, onkeydown: (e) => { if (e.key === "Enter") choose(); } },
      h("span", { class: "gantt-label" }, h("span", { class: "state-dot s-" + r.s.status }), r.id,
        r.s.wave !== undefined && r.s.dispatched_at ? h("span", { class: "muted" }, " w" + (r.s.wave + 1)) : ""),
      track,
      h("span", { class: "gantt-took muted" }, r.bars.length ? r.note : ""));
    });
    return h("div", { class: "gantt", role: "table", "aria-label": "steps over time" }, axis, body);
  };
})();
