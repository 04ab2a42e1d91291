// pages.js: the Agents, Files and Submit pages.
"use strict";

(function () {
  const h = AM.h;
  AM.pages = {};

  // Agents: every live agent with its contract, instances and recent
  // numbers, redrawn when the registry changes (/api/events).
  AM.pages.agents = async function (main) {
    const list = h("div", { class: "agents", id: "agents" }, h("p", { class: "muted" }, "loading agents…"));
    AM.clear(main, h("h1", {}, "Agents"), list);
    const draw = async () => {
      try {
        const agents = AM.list(await AM.api("GET", "/api/agents"), "agents");
        agents.sort((a, b) => agentName(a).localeCompare(agentName(b)));
        AM.clear(list, agents.length ? agents.map(agentCard) : h("p", { class: "muted" }, "No agent is announced on this mesh yet."));
      } catch (e) {
        AM.clear(list, AM.error(e));
      }
    };
    const redraw = AM.debounce(draw, 150);
    AM.follow("/api/events", (type) => { if (type.includes(".agent.") || type.includes("registry")) redraw(); }, redraw);
    await draw();
  };

  const agentName = (a) => a.name || (a.contract && a.contract.name) || "";

  function agentCard(a) {
    const c = a.contract || {};
    const st = a.stats || {};
    const inst = a.instances || [];
    return h("section", { class: "card agent", "data-agent": agentName(a) },
      h("header", {},
        h("h2", {}, agentName(a)),
        c.capability ? h("span", { class: "badge" }, c.capability) : "",
        h("span", { class: "badge " + (inst.length ? "ok" : "bad") }, inst.length + (inst.length === 1 ? " instance" : " instances"))),
      h("p", {}, a.description || c.description || ""),
      h("div", { class: "contract" },
        ioList("inputs", c.inputs), h("span", { class: "arrow" }, "→"), ioList("outputs", c.outputs)),
      h("div", { class: "stats" },
        stat("backlog", st.backlog ?? "–"), stat("success", AM.pct(st.success_rate)), stat("p50", AM.ms(st.p50_ms)),
        c.timeout_ms ? stat("timeout", AM.ms(c.timeout_ms)) : ""),
      st.rollout ? h("p", { class: "rollout" }, rolloutLine(st.rollout)) : "",
      (st.versions || []).length ? versionsTable(st.versions) : "",
      c.params ? paramsTable(c.params) : "",
      inst.length ? h("table", { class: "instances" },
        h("thead", {}, h("tr", {}, h("th", {}, "instance"), h("th", {}, "host"), h("th", {}, "last heartbeat"))),
        h("tbody", {}, inst.map((i) => h("tr", {}, h("td", {}, i.id), h("td", {}, i.host || "–"),
          h("td", { title: i.last_heartbeat || "" }, AM.ago(i.last_heartbeat)))))) : "");
  }

  // rolloutLine says where a rollout (agentmesh rollout) sends new tasks.
  function rolloutLine(r) {
    let s;
    if (r.weight === 0) s = "rollout: every new task to " + r.from + " (rolled back from " + r.to + ")";
    else if (r.weight === 100) s = "rollout: every new task to " + r.to + " (promoted from " + r.from + ")";
    else s = "rollout: " + r.weight + "% of new tasks to " + r.to + ", " + (100 - r.weight) + "% to " + r.from;
    return r.shadow ? s + "; shadow copies to " + r.to : s;
  }

  // versionsTable shows the recent results by version: how a rollout is
  // judged.
  function versionsTable(vs) {
    return h("table", { class: "versions" },
      h("thead", {}, h("tr", {}, ["version", "results", "failed", "success", "p50", "p95"].map((x) => h("th", {}, x)))),
      h("tbody", {}, vs.map((v) => h("tr", { "data-version": v.version },
        h("td", {}, (v.version || "(none)") + (v.shadow ? " (shadow)" : "")), h("td", {}, String(v.results)),
        h("td", {}, String(v.failures)), h("td", {}, AM.pct(v.success_rate)),
        h("td", {}, AM.ms(v.p50_ms)), h("td", {}, AM.ms(v.p95_ms))))));
  }

  // paramsTable lists the params a contract's JSON Schema declares: name,
  // type (or allowed values), default and description; the schema itself
  // one click away.
  function paramsTable(schema) {
    const props = (schema && schema.properties) || {};
    const required = new Set((schema && schema.required) || []);
    const names = Object.keys(props);
    return h("details", { class: "params" }, h("summary", {}, "params" + (names.length ? " (" + names.join(", ") + ")" : "")),
      names.length ? h("table", {}, h("tbody", {}, names.map((n) => {
        const p = props[n] || {};
        const type = p.enum ? p.enum.map(String).join(" | ") : [].concat(p.type || "any").join(" | ");
        return h("tr", {}, h("td", {}, h("b", {}, n), required.has(n) ? h("span", { class: "req" }, " required") : ""),
          h("td", {}, h("span", { class: "type" }, type)),
          h("td", { class: "muted" }, p.default !== undefined ? "default " + JSON.stringify(p.default) : ""),
          h("td", {}, p.description || ""));
      }))) : "",
      h("details", {}, h("summary", {}, "JSON Schema"), AM.json(schema)));
  }

  function ioList(kind, items) {
    return h("ul", { class: "io " + kind }, (items || []).length ? items.map((x) =>
      h("li", { title: x.description || "" },
        h("b", {}, x.name), " ", h("span", { class: "type" }, x.data_type + (x.content_type_hint ? "/" + x.content_type_hint : "")),
        x.required ? h("span", { class: "req" }, " required") : "",
        x.mergeable ? h("span", { class: "muted" }, " mergeable") : "")) : h("li", { class: "muted" }, "no " + kind));
  }

  const stat = (label, value) => h("div", { class: "stat" }, h("span", { class: "muted" }, label), h("b", {}, String(value)));

  // Files: the object store, by folder and type, with a preview of the
  // chosen file.
  AM.pages.files = async function (main, params) {
    const folder = h("input", { placeholder: "folder", value: params.folder || "" });
    const type = h("select", {}, ["", "images", "documents", "links"].map((t) => h("option", { value: t }, t || "all types")));
    type.value = params.type || "";
    const grid = h("div", { class: "files", id: "files" }, h("p", { class: "muted" }, "loading files…"));
    const preview = h("aside", { class: "preview", id: "preview" }, h("p", { class: "muted" }, "Choose a file to preview it."));
    const folders = h("ul", { class: "tree folders" });
    AM.clear(main, h("h1", {}, "Files"),
      h("form", { class: "filters", onsubmit: (e) => { e.preventDefault(); draw(); } }, folder, type, h("button", { type: "submit" }, "Filter")),
      h("div", { class: "split" }, h("nav", { class: "folder-nav" }, folders), grid, preview));
    const draw = async () => {
      const q = new URLSearchParams();
      if (folder.value) q.set("folder", folder.value);
      if (type.value) q.set("type", type.value);
      try {
        const list = AM.list(await AM.api("GET", "/api/files?" + q), "files");
        AM.clear(grid, list.length ? list.map((f) => fileCard(f, preview)) : h("p", { class: "muted" }, "No file matches."));
        if (!folder.value) drawFolders(folders, list, folder, draw);
        if (params.id) showFile(preview, list.find((f) => f.id === params.id) || { id: params.id });
      } catch (e) {
        AM.clear(grid, AM.error(e));
      }
    };
    type.addEventListener("change", draw);
    await draw();
  };

  const fileFolder = (f) => f.folder || (f.metadata && f.metadata.folder) || "";
  const fileName = (f) => f.filename || f.name || (f.metadata && (f.metadata.filename || f.metadata.name)) || f.id;
  const isImage = (f) => (f.media_type || f.content_type || "").startsWith("image/");

  function drawFolders(el, list, input, draw) {
    const counts = {};
    for (const f of list) counts[fileFolder(f) || "(no folder)"] = (counts[fileFolder(f) || "(no folder)"] || 0) + 1;
    AM.clear(el, Object.keys(counts).sort().map((name) =>
      h("li", { class: "folder", "data-folder": name },
        h("a", { href: "#", onclick: (e) => { e.preventDefault(); input.value = name === "(no folder)" ? "" : name; draw(); } },
          name + " (" + counts[name] + ")"))));
  }

  // fileKind is the short name of a file's type for its tile: the media
  // type's subtype without parameters (charset) or vendor prefixes, "PLAIN"
  // as "TXT": text/plain; charset=utf-8 is TXT, application/vnd.ms-excel
  // MS-EXCEL.
  const kindNames = { plain: "TXT", markdown: "MD", "x-markdown": "MD", javascript: "JS", "octet-stream": "BIN" };
  function fileKind(f) {
    const sub = (f.media_type || f.content_type || "").split(";")[0].trim().toLowerCase().split("/")[1] || "";
    const short = kindNames[sub] || sub.replace(/^(x-|vnd\.)/, "").split("+").pop();
    return (short || "file").slice(0, 8).toUpperCase();
  }

  function fileCard(f, preview) {
    return h("button", { class: "file", type: "button", "data-file": f.id, title: fileName(f), onclick: () => showFile(preview, f) },
      isImage(f) ? h("img", { src: AM.fileURL(f.id, true), alt: fileName(f), loading: "lazy" }) : h("div", { class: "doc-icon", title: f.media_type || "" }, fileKind(f)),
      h("div", { class: "name" }, fileName(f)),
      h("div", { class: "muted" }, [fileFolder(f) && fileFolder(f) + "/", AM.bytes(f.size)].filter(Boolean).join(" · ")));
  }

  async function showFile(preview, f) {
    AM.clear(preview, h("p", { class: "muted" }, "loading " + f.id + "…"));
    try {
      const meta = await AM.api("GET", "/api/files/" + encodeURIComponent(f.id));
      const body = isImage(meta)
        ? h("img", { class: "full", src: AM.fileURL(f.id), alt: fileName(meta) })
        : h("pre", { class: "doc" }, await textOf(f.id));
      AM.clear(preview, h("h2", {}, fileName(meta)), body,
        h("a", { href: AM.fileURL(f.id), target: "_blank" }, "open"), AM.json(meta));
    } catch (e) {
      AM.clear(preview, AM.error(e));
    }
  }

  async function textOf(id) {
    const resp = await fetch(AM.fileURL(id), { headers: AM.token() ? { Authorization: "Bearer " + AM.token() } : {} });
    const type = resp.headers.get("Content-Type") || "";
    if (!type.startsWith("text/") && !type.includes("json")) return "(" + type + ", " + AM.bytes(Number(resp.headers.get("Content-Length"))) + ")";
    const text = await resp.text();
    return text.length > 8000 ? text.slice(0, 8000) + "\n…" : text;
  }

  // Submit: paste a pipeline's YAML; it is checked as you type with the
  // same messages as `agentmesh run`, then submitted.
  AM.pages.submit = async function (main) {
    const area = h("textarea", { id: "pipeline-yaml", rows: 16, spellcheck: "false",
      placeholder: "name: sunsets\nsteps:\n  - {id: search, agent: ImageSearchAgent, params: {query: sunset}}" });
    const vars = h("input", { id: "pipeline-vars", placeholder: "vars: k=v k2=v2" });
    const out = h("div", { id: "pipeline-check", class: "check" });
    const submit = h("button", { id: "pipeline-submit", type: "submit" }, "Submit");
    area.value = sessionStorage.getItem("agentmesh.pipeline") || "";
    const query = () => {
      const q = new URLSearchParams();
      for (const kv of vars.value.split(/\s+/).filter(Boolean)) q.append("var", kv);
      return q.toString() ? "?" + q : "";
    };
    const validate = async () => {
      sessionStorage.setItem("agentmesh.pipeline", area.value);
      if (!area.value.trim()) return AM.clear(out);
      try {
        await AM.api("POST", "/api/pipelines/validate" + query(), area.value, "application/yaml");
        AM.clear(out, h("div", { class: "ok", "data-valid": "true" }, "✓ valid against the live agents"));
      } catch (e) {
        AM.clear(out, h("pre", { class: "error", "data-valid": "false" }, e.message));
      }
    };
    const check = AM.debounce(validate, 400);
    area.addEventListener("input", check);
    vars.addEventListener("input", check);
    const form = h("form", { class: "submit", onsubmit: async (e) => {
      e.preventDefault();
      submit.disabled = true;
      try {
        const r = await AM.api("POST", "/api/pipelines" + query(), area.value, "application/yaml");
        location.hash = "#/runs/" + encodeURIComponent(r.run_id);
      } catch (err) {
        AM.clear(out, h("pre", { class: "error", "data-valid": "false" }, err.message));
      } finally {
        submit.disabled = false;
      }
    } }, area, vars, h("div", { class: "row" }, submit, h("button", { type: "button", onclick: validate }, "Validate")), out);
    AM.clear(main, h("h1", {}, "Submit a pipeline"),
      h("p", { class: "muted" }, "Paste a pipeline in YAML (see examples/pipelines/). It is checked against the live agents' contracts as you type."),
      form);
    if (area.value) validate();
  };
})();
