// memory.js: the Memory page (#/memory[?identity=ID]): the facts the chat
// remembers across conversations, per client identity (GET /api/memory),
// each with a Forget button (POST /api/memory/{identity}/{id}/forget).
"use strict";

(function () {
  const h = AM.h;

  AM.pages.memory = async function (main, params) {
    const who = h("input", { placeholder: "client identity", value: params.identity || "" });
    const table = h("div", { id: "memory" }, h("p", { class: "muted" }, "loading facts…"));
    AM.clear(main, h("h1", {}, "Memory"),
      h("p", { class: "muted" }, "Facts the chat remembers across conversations (orchestrator --memory), recalled into the same client's later turns."),
      h("form", { class: "filters", onsubmit: (e) => { e.preventDefault(); draw(); } }, who, h("button", { type: "submit" }, "Show")),
      table);
    const draw = async () => {
      const q = who.value ? "?identity=" + encodeURIComponent(who.value) : "";
      try {
        const facts = AM.list(await AM.api("GET", "/api/memory" + q), "facts");
        AM.clear(table, facts.length ? h("table", { class: "list" },
          h("thead", {}, h("tr", {}, ["Identity", "Fact", "Source", "When", ""].map((c) => h("th", {}, c)))),
          h("tbody", {}, facts.map((f) => h("tr", { class: "fact", "data-id": f.id },
            h("td", {}, f.identity), h("td", { class: "fact-text" }, f.text), h("td", {}, f.source),
            h("td", { title: f.at }, AM.ago(f.at)),
            h("td", {}, h("button", { class: "forget", onclick: async () => {
              try {
                await AM.api("POST", "/api/memory/" + encodeURIComponent(f.identity) + "/" + encodeURIComponent(f.id) + "/forget");
                draw();
              } catch (e) {
                AM.clear(table, AM.error(e));
              }
            } }, "Forget")))))) : h("p", { class: "muted" }, "No remembered facts."));
      } catch (e) {
        AM.clear(table, AM.error(e));
      }
    };
    await draw();
  };
})();
