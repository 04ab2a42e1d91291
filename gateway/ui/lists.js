// lists.js: a list page's search box, filters, sortable columns and pager,
// all answered by the gateway (GET /api/runs and /api/conversations take
// q, status, agent, name, since, sort, limit and offset). The query lives in
// the address (#/runs?q=sun&status=failed), so a filtered list can be
// reloaded, bookmarked and shared.
"use strict";

(function () {
  const h = AM.h;

  // Query parameters a list page keeps in its address.
  const KEYS = ["q", "status", "agent", "name", "since", "sort", "offset", "limit"];

  // sinceChoices are the time filters offered: how long ago.
  const sinceChoices = [["", "any time"], ["1h", "last hour"], ["24h", "last 24 hours"], ["168h", "last 7 days"]];

  // listView builds a list page's controls and table. o: {id (the table's
  // container id), path (the API), page (the route, "runs"), params (the
  // route's), columns [{label, sort?, cell(item), attrs?(item), narrow?
  // (false: not shown on a phone)}], row(item) (the tr's
  // attributes), filters: {status: [...], agents: true}, noun (for
  // "no run matches"), empty (shown when there is none at all)}. It returns
  // {el, draw}.
  AM.listView = function (o) {
    const query = {};
    for (const k of KEYS) if (o.params[k]) query[k] = o.params[k];
    const PAGE = Number(query.limit) > 0 ? Number(query.limit) : 25; // a page; ?limit= in the address sets it
    const table = h("div", { id: o.id, class: "table-wrap" }, h("p", { class: "muted" }, "loading…"));
    const pager = h("div", { class: "pager", id: o.id + "-pager" });
    const search = h("input", { type: "search", id: o.id + "-q", placeholder: "search " + o.noun + "s: id, " + o.searchHint, value: query.q || "", "aria-label": "search" });
    const controls = [search];
    const select = (key, choices, label) => {
      const el = h("select", { id: o.id + "-" + key, "aria-label": label },
        choices.map(([v, text]) => h("option", { value: v }, text)));
      el.value = query[key] || "";
      el.addEventListener("change", () => set(key, el.value));
      controls.push(el);
      return el;
    };
    if (o.filters.status) select("status", [["", "any status"]].concat(o.filters.status.map((s) => [s, s.replace(/_/g, " ")])), "status");
    let agentSelect = null;
    if (o.filters.agents) {
      agentSelect = select("agent", [["", "any agent"]].concat(query.agent ? [[query.agent, query.agent]] : []), "agent");
      fillAgents(agentSelect, query.agent);
    }
    select("since", sinceChoices, "started");
    const chip = h("span", { class: "filter-chips" });
    const form = h("form", { class: "filters list-filters", role: "search", onsubmit: (e) => { e.preventDefault(); set("q", search.value.trim()); } },
      controls, h("button", { type: "submit" }, "Search"), chip);
    search.addEventListener("input", AM.debounce(() => { if (search.value.trim() !== (query.q || "")) set("q", search.value.trim()); }, 350));

    // set changes one parameter, goes back to the first page and redraws;
    // the address follows without a reload of the page.
    function set(key, value) {
      if (value) query[key] = value; else delete query[key];
      if (key !== "offset" && key !== "limit") delete query.offset;
      const qs = new URLSearchParams(query).toString();
      history.replaceState(null, "", "#/" + o.page + (qs ? "?" + qs : ""));
      draw();
    }

    function drawChips() {
      AM.clear(chip, query.name ? h("button", { type: "button", class: "chip", id: o.id + "-name", title: "show every pipeline",
        onclick: () => set("name", "") }, "pipeline: " + query.name + " ✕") : "");
    }

    function header() {
      const [key, desc] = query.sort ? [query.sort.replace(/^-/, ""), query.sort.startsWith("-")] : ["", false];
      return h("thead", {}, h("tr", {}, o.columns.map((c) => {
        if (!c.sort) return h("th", { scope: "col", class: c.narrow === false ? "narrow-hide" : undefined }, c.label);
        const on = key === c.sort;
        const next = on && !desc ? "-" + c.sort : on ? "" : c.sort; // asc, desc, back to the default
        return h("th", { scope: "col", class: c.narrow === false ? "narrow-hide" : undefined, "aria-sort": on ? (desc ? "descending" : "ascending") : "none", "data-sort": c.sort },
          h("button", { type: "button", class: "sort", onclick: () => set("sort", next), title: "sort by " + c.label },
            c.label, h("span", { class: "arrow" }, on ? (desc ? " ▼" : " ▲") : " ⇅")));
      })));
    }

    // cellAttrs are a cell's attributes; a column marked narrow: false is
    // left out on a phone's screen.
    function cellAttrs(c, it) {
      const a = Object.assign({}, c.attrs ? c.attrs(it) : {});
      if (c.narrow === false) a.class = ((a.class || "") + " narrow-hide").trim();
      return a;
    }

    let seq = 0;
    async function draw() {
      const mine = ++seq;
      drawChips();
      const qs = new URLSearchParams(query);
      qs.set("limit", String(PAGE));
      try {
        const { items, total } = await AM.apiList(o.path + "?" + qs);
        if (mine !== seq) return; // a later draw is on its way
        const offset = Number(query.offset || 0);
        const filtered = ["q", "status", "agent", "name", "since"].some((k) => query[k]);
        AM.clear(table, items.length ? h("table", { class: "list" }, header(), h("tbody", {}, items.map((it) =>
          h("tr", o.row(it), o.columns.map((c) => h("td", cellAttrs(c, it), c.cell(it))))))) :
          h("p", { class: "muted empty" }, filtered || offset ? "No " + o.noun + " matches." : o.empty));
        drawPager(offset, items.length, total);
      } catch (e) {
        if (mine === seq) AM.clear(table, AM.error(e));
      }
    }

    function drawPager(offset, shown, total) {
      if (!total) return AM.clear(pager);
      const go = (n) => set("offset", n > 0 ? String(n) : "");
      AM.clear(pager,
        h("button", { type: "button", id: o.id + "-prev", disabled: offset <= 0, onclick: () => go(Math.max(0, offset - PAGE)) }, "‹ newer"),
        h("span", { class: "muted", id: o.id + "-range" }, shown ? (offset + 1) + "–" + (offset + shown) + " of " + total : "none of " + total),
        h("button", { type: "button", id: o.id + "-next", disabled: offset + shown >= total, onclick: () => go(offset + PAGE) }, "older ›"));
    }

    return { el: h("div", { class: "list-view" }, form, table, pager), draw, set };
  };

  // fillAgents offers the live agents' names in a select.
  async function fillAgents(sel, chosen) {
    try {
      const names = AM.list(await AM.api("GET", "/api/agents"), "agents").map((a) => a.name || (a.contract && a.contract.name)).filter(Boolean).sort();
      for (const n of names) if (n !== chosen) sel.append(h("option", { value: n }, n));
    } catch (_) { /* the filter still takes the address's agent */ }
  }

  // apiList reads a list answer and how many items match (X-Total-Count).
  AM.apiList = async function (path) {
    const { data, headers } = await AM.call("GET", path);
    const items = AM.list(data);
    const total = Number(headers.get("X-Total-Count") ?? NaN);
    return { items, total: isNaN(total) ? items.length : total };
  };
})();
