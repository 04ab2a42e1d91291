// chat.js: the Conversations pages — the list (searched, filtered by the
// latest turn's state and agents, sorted and paged by the gateway), one
// conversation's turns with each tool call's inputs and outputs and the
// text the model is writing, and the chat box that sends a turn and
// streams its progress.
"use strict";

(function () {
  const h = AM.h;

  AM.pages.conversations = async function (main, params) {
    const view = AM.listView({
      id: "conversations", path: "/api/conversations", page: "conversations", params, noun: "conversation", searchHint: "last message",
      filters: { status: ["running", "input_required", "completed", "step_limit_reached", "failed"], agents: true },
      empty: "No conversation yet: ask the mesh something above.",
      row: (c) => ({ "data-conversation": c.id, "data-state": c.state || "" }),
      columns: [
        { label: "conversation", sort: "id", cell: (c) => h("a", { href: "#/conversations/" + encodeURIComponent(c.id) }, c.id) },
        { label: "turns", sort: "turns", cell: (c) => c.turns ?? (c.turn_count || "–") },
        { label: "last message", cell: (c) => c.last_message || c.title || c.message || "", attrs: () => ({ class: "clip" }) },
        { label: "last turn", cell: (c) => c.state ? h("span", { class: "badge " + stateClass(c.state) }, c.state.replace(/_/g, " ")) : "" },
        { label: "agents", narrow: false, cell: (c) => (c.agents || []).join(", "), attrs: () => ({ class: "clip agents-cell" }) },
        { label: "started", sort: "created_at", narrow: false, cell: (c) => h("span", { title: AM.when(c.created_at) }, AM.ago(c.created_at)) },
        { label: "updated", sort: "updated_at", cell: (c) => h("span", { title: AM.when(c.updated_at) }, AM.ago(c.updated_at)) },
      ],
    });
    AM.clear(main, h("h1", {}, "Conversations"), chatBox(""), view.el);
    const redraw = AM.debounce(view.draw, 200);
    AM.follow("/api/events", (type) => { if (type.includes("chat") || type.includes("conversation")) redraw(); }, redraw);
    await view.draw();
  };

  AM.pages.conversation = async function (main, params) {
    const id = params.id;
    const turns = h("div", { id: "turns" }, h("p", { class: "muted" }, "loading…"));
    const progress = h("ol", { id: "progress", class: "progress" });
    const writing = h("section", { id: "writing", class: "card turn writing", hidden: true, "aria-live": "polite" });
    const budget = h("div", { id: "budget-panel" });
    AM.clear(main, h("h1", {}, h("a", { href: "#/conversations" }, "Conversations"), " / ", id), budget, turns, writing,
      h("section", { class: "card" }, h("h2", {}, "Live"), progress), chatBox(id, progress));
    const draw = async () => {
      try {
        const c = await AM.api("GET", "/api/conversations/" + encodeURIComponent(id));
        AM.clear(budget, AM.conversationBudget(c));
        AM.clear(turns, renderConversation(c));
      } catch (e) {
        AM.clear(turns, AM.error(e));
      }
    };
    const redraw = AM.debounce(draw, 150);
    const stream = { key: "", seq: 0 };
    AM.follow("/api/conversations/" + encodeURIComponent(id) + "/events?deltas=true", (type, data, meta) => {
      if (type === AM.typeChatDelta) return showDelta(writing, stream, data || {});
      if (type.endsWith("chat.responded")) { // the whole answer is in the turn drawn next
        writing.hidden = true;
        AM.clear(writing);
        stream.key = "";
      }
      logProgress(progress, type, data, meta.time);
      redraw();
    }, redraw);
    await draw();
  };

  // typeChatDelta is the event of a conversation's stream that carries a
  // piece of the text the model is writing (GET
  // /api/conversations/{id}/events; its data is a ChatDelta).
  AM.typeChatDelta = "io.agentmesh.delta";

  // showDelta adds a piece of the model's text to what it is writing: a
  // new model call (turn and step) starts anew; a gap in seq, a piece lost
  // on the way, shows as "…".
  function showDelta(el, stream, d) {
    const key = d.turn + "/" + d.step;
    if (key !== stream.key) {
      stream.key = key;
      stream.seq = 0;
      AM.clear(el, h("div", { class: "muted" }, "writing…"), h("div", { class: "assistant", id: "writing-text", "data-turn": d.turn, "data-step": d.step }, h("b", {}, "mesh ")));
      el.hidden = false;
    }
    const text = el.querySelector("#writing-text");
    if (d.seq > stream.seq + 1) text.append(h("span", { class: "lost", title: "a piece of the text was lost on the way; the answer will be whole" }, "…"));
    stream.seq = Math.max(stream.seq, d.seq || 0);
    text.append(String(d.text || ""));
  }

  // chatBox sends a turn to conversation id (a new one when empty) and
  // opens the conversation's page, which streams the turn's progress.
  function chatBox(id, progress) {
    const input = h("textarea", { id: "chat-input", rows: 2, placeholder: "Ask the mesh, e.g. find my sunset photos and put them in a folder" });
    const send = h("button", { id: "chat-send", type: "submit" }, "Send");
    const status = h("span", { class: "muted", id: "chat-status" });
    const form = h("form", { class: "chat", id: "chat-form", onsubmit: async (e) => {
      e.preventDefault();
      const message = input.value.trim();
      if (!message) return;
      send.disabled = true;
      AM.clear(status, "sending…");
      try {
        const body = { message };
        if (id) body.conversation_id = id;
        const r = await AM.api("POST", "/api/chat", body);
        input.value = "";
        AM.clear(status, "accepted (request " + (r.request_id || "?") + ")");
        if (progress) logProgress(progress, "sent", { message }, new Date().toISOString());
        if (!id) location.hash = "#/conversations/" + encodeURIComponent(r.conversation_id);
      } catch (err) {
        AM.clear(status, AM.error(err));
      } finally {
        send.disabled = false;
      }
    } }, input, h("div", { class: "row" }, send, status));
    input.addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); } });
    return form;
  }

  // logProgress adds one line per event of the turn: progress messages,
  // tool calls, the answer; each with the time it happened (when, from the
  // event), not the time the page read it.
  function logProgress(list, type, data, when) {
    const d = data || {};
    let text = d.message || d.summary || d.output || "";
    if (type.endsWith("chat.responded")) text = "answer (" + (d.state || "?") + "): " + (d.output || d.error || "");
    else if (d.agent && !text.includes(d.agent)) text = d.agent + ": " + text;
    if (!text) text = typeof data === "string" ? data : JSON.stringify(d);
    list.append(h("li", { "data-type": type, "data-time": when || "" }, h("time", { class: "muted", datetime: when || "" }, AM.clock(when) + " "), text));
    while (list.children.length > 200) list.firstChild.remove();
  }

  // renderConversation draws the answered turns (each a message, the
  // mesh's response and its tool calls with their outputs), then what the
  // history holds of a turn still under way.
  function renderConversation(c) {
    const turns = c.turns || [];
    const out = turns.map((t, i) => {
      const r = t.response || t;
      return h("section", { class: "card turn", "data-turn": i },
        h("div", { class: "user" }, h("b", {}, "you "), t.message || ""),
        h("div", { class: "meta" },
          r.state ? h("span", { class: "badge " + stateClass(r.state) }, r.state) : "",
          " ", AM.ms(r.duration_ms), " · ", AM.tokens(r), " · ", AM.cost(r.cost),
          r.steps ? " · " + AM.plural(r.steps, "step") : "", r.planner ? " · " + r.planner + " planner" : ""),
        (t.tool_calls || r.tool_calls || []).map(toolCall),
        r.output ? h("div", { class: "assistant" }, h("b", {}, "mesh "), r.output) : "",
        r.error ? AM.error({ code: r.code, message: r.error }) : "");
    });
    const pending = pendingHistory(c.history || [], turns.length);
    if (pending.length) out.push(renderHistory(pending));
    if (!out.length) return h("p", { class: "muted" }, "No turn yet.");
    return out;
  }

  // pendingHistory is the history after the answered turns' last user
  // message: the turn under way, if any.
  function pendingHistory(history, answered) {
    let users = 0;
    for (let i = 0; i < history.length; i++) {
      if (history[i].kind === "user" && ++users > answered) return history.slice(i);
    }
    return [];
  }

  function toolCall(tc) {
    const ok = tc.success !== false && !tc.error;
    return h("details", { class: "tool-call" + (ok ? "" : " failed"), "data-tool": tc.agent, open: true },
      h("summary", {}, h("b", {}, tc.agent), " ", h("span", { class: "muted" }, AM.ms(tc.duration_ms)), " ",
        tc.tokens && (tc.tokens.prompt || tc.tokens.completion) ? h("span", { class: "muted" }, AM.tokens(tc) + " · " + AM.cost(tc.cost) + " ") : "",
        tc.summary || "", tc.error ? h("span", { class: "err" }, " " + tc.error) : ""),
      h("div", { class: "io-grid" },
        h("div", {}, h("h4", {}, "inputs"), tc.inputs ? AM.values(tc.inputs) : AM.args(tc.arguments)),
        h("div", {}, h("h4", {}, "outputs"), AM.values(tc.outputs))));
  }

  function renderHistory(history) {
    return h("section", { class: "card turn pending" }, h("div", { class: "muted" }, "under way…"), history.map((e) => {
      switch (e.kind) {
        case "user": return h("div", { class: "user" }, h("b", {}, "you "), e.text);
        case "assistant": return h("div", { class: "assistant" }, h("b", {}, "mesh "), e.text);
        case "result": case "tool":
          return h("details", { class: "tool-call", "data-tool": e.agent, open: true },
            h("summary", {}, h("b", {}, e.agent || e.kind), " ", e.text || ""), AM.values(e.outputs));
        default: return h("div", { class: "muted" }, e.text || "");
      }
    }));
  }

  function stateClass(s) {
    if (s === "completed") return "ok";
    if (s === "failed" || s === "step_limit_reached") return "bad";
    return "";
  }
  AM.stateClass = stateClass;
})();
