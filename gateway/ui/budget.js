// budget.js: the budget panel of a run's and a conversation's page: what
// the model calls spent of each budget (spent / limit, in tokens and US
// dollars) and the refusals: the model calls a budget stopped
// (budget_exceeded) and the calls a policy refused (policy_refused).
"use strict";

(function () {
  const h = AM.h;

  // refusals are the codes the panel lists.
  const refusals = { budget_exceeded: "a budget stopped it", policy_refused: "a policy refused it" };

  function spent(u) {
    const t = (u && (u.tokens || (u.metrics && u.metrics.tokens))) || {};
    const usd = (u && (u.cost ?? (u.metrics && u.metrics.cost))) || 0;
    return { tokens: (t.prompt || 0) + (t.completion || 0), usd: Number(usd) };
  }

  // meter is one line "spent S of L tokens" with a bar, for one kind of limit.
  function meter(kind, used, limit, show) {
    return h("div", { class: "budget-line" + (used >= limit ? " over" : ""), "data-kind": kind, "data-spent": used, "data-limit": limit },
      h("span", { class: "budget-text" }, "spent " + show(used) + " of " + show(limit)),
      h("progress", { class: "budget-bar", max: limit, value: Math.min(used, limit), "aria-label": kind + " spent of the budget" }));
  }

  // lines are the meters of budget b against the spend s.
  function lines(b, s) {
    const out = [];
    if (b && b.tokens) out.push(meter("tokens", s.tokens, b.tokens, (n) => n + " tokens"));
    if (b && b.usd) out.push(meter("usd", s.usd, b.usd, (n) => "$" + Number(n).toFixed(4)));
    return out;
  }

  function refusal(where, code, message) {
    return h("li", { class: "refusal", "data-code": code }, h("b", {}, where), " ",
      h("span", { class: "badge bad" }, code), " ", refusals[code] + (message ? ": " : ""), h("span", { class: "reason" }, message || ""));
  }

  function panel(id, body, refused) {
    return h("section", { class: "card budget", id },
      h("h2", {}, "Budget"), body,
      refused.length ? h("div", {}, h("h4", {}, "Refused"), h("ul", { class: "refusals" }, refused)) : "");
  }

  // AM.runBudget is the panel of a run: its spec's budget against what its
  // steps used, and the steps a budget or a policy stopped; "" when the
  // run has neither.
  AM.runBudget = function (run) {
    const b = run.spec && run.spec.budget;
    const steps = Object.values(run.steps || {});
    const refused = steps.filter((s) => refusals[s.code]).map((s) => refusal("step " + s.id, s.code, s.error));
    if (!refused.length && refusals[run.code] && run.error) refused.push(refusal("run", run.code, run.error));
    if (!b && !refused.length) return "";
    const s = { tokens: 0, usd: 0 };
    for (const st of steps) {
      const u = spent(st);
      s.tokens += u.tokens;
      s.usd += u.usd;
    }
    return panel("run-budget", b ? h("div", { class: "budget-lines", "data-scope": "run" }, lines(b, s)) : "", refused);
  };

  // AM.conversationBudget is the panel of a conversation: each turn's
  // budget against what it spent, and the turns and agent calls a budget
  // or a policy stopped; "" when it has neither.
  AM.conversationBudget = function (c) {
    const turns = c.turns || [];
    const body = [], refused = [];
    turns.forEach((t, i) => {
      const r = t.response || t;
      if (r.budget) body.push(h("div", { class: "budget-lines", "data-scope": "turn", "data-turn": i + 1 }, h("h4", {}, "turn " + (i + 1)), lines(r.budget, spent(r))));
      (t.tool_calls || r.tool_calls || []).forEach((tc) => { if (refusals[tc.code]) refused.push(refusal("turn " + (i + 1) + ", " + tc.agent, tc.code, tc.error)); });
      if (refusals[r.code]) refused.push(refusal("turn " + (i + 1), r.code, r.error));
    });
    if (!body.length && !refused.length) return "";
    return panel("conversation-budget", body, refused);
  };
})();
