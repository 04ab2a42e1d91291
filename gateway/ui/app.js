// app.js: the hash router. #/agents, #/conversations[/ID], #/runs[/ID],
// #/files[/ID], #/memory, #/submit; a list's query after "?" (#/runs?status=failed).
"use strict";

(function () {
  const main = document.getElementById("main");

  function route() {
    const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
    const parts = path.split("/").map(decodeURIComponent);
    const [page, id] = [parts[0] || "agents", parts[1] || ""];
    const params = Object.fromEntries(new URLSearchParams(query || ""));
    params.id = id;
    const fn = {
      agents: AM.pages.agents,
      conversations: params.id ? AM.pages.conversation : AM.pages.conversations,
      runs: params.id ? AM.pages.run : AM.pages.runs,
      files: AM.pages.files,
      memory: AM.pages.memory,
      submit: AM.pages.submit,
    }[page];
    AM.leave();
    for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.nav === page);
    if (!fn) return AM.clear(main, AM.error({ message: "No page " + page + "; choose one above." }));
    document.title = "agentmesh · " + page;
    fn(main, params).catch((e) => AM.clear(main, AM.error(e)));
  }

  // A link with ?access_token=T (what `agentmesh up --secure` prints) gives
  // the token: kept in this browser, taken out of the address bar.
  const given = new URLSearchParams(location.search).get("access_token");
  if (given) {
    localStorage.setItem("agentmesh.token", given);
    history.replaceState(null, "", location.pathname + location.hash);
  }

  document.getElementById("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    localStorage.setItem("agentmesh.token", document.getElementById("token").value);
    e.target.hidden = true;
    route();
  });
  window.addEventListener("hashchange", route);
  route();
})();
