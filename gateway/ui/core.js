// core.js: DOM building, the API client, server-sent events and the page
// lifecycle shared by every page of the dashboard. No framework: each page
// is a function that fills an element and registers what to stop when the
// reader leaves it.
"use strict";

const AM = {};

// h builds an element: h("div", {class: "x", onclick: fn}, child, ...).
// Children are nodes or strings (always set as text, never as HTML).
AM.h = function (tag, attrs, ...children) {
  const svg = tag.startsWith("svg:");
  const el = svg ? document.createElementNS("http://www.w3.org/2000/svg", tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "value" && !svg) el.value = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  AM.append(el, children);
  return el;
};

AM.append = function (el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
};

AM.clear = function (el, ...children) {
  el.replaceChildren();
  return AM.append(el, children);
};

// The bearer token, when the gateway asks for one (401), kept in this
// browser only.
AM.token = () => localStorage.getItem("agentmesh.token") || "";

function authHeaders(extra) {
  const headers = Object.assign({}, extra || {});
  if (AM.token()) headers.Authorization = "Bearer " + AM.token();
  return headers;
}

// APIError carries the mesh's error code and message from an
// {"error":{"code","message"}} body.
class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}
AM.APIError = APIError;

// api calls the gateway: api("GET", "/api/agents"), api("POST", path, body,
// contentType). JSON bodies are encoded here; a string body goes as is.
AM.api = async function (method, path, body, contentType) {
  return (await AM.call(method, path, body, contentType)).data;
};

// call is api answering {data, headers}, for the answers whose headers
// matter (a list's X-Total-Count).
AM.call = async function (method, path, body, contentType) {
  const init = { method, headers: authHeaders() };
  if (body !== undefined) {
    if (typeof body === "string") {
      init.body = body;
      init.headers["Content-Type"] = contentType || "text/plain";
    } else {
      init.body = JSON.stringify(body);
      init.headers["Content-Type"] = "application/json";
    }
  }
  const resp = await fetch(path, init);
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (_) { data = text; }
  if (resp.status === 401) AM.askToken();
  if (!resp.ok) {
    const e = (data && data.error) || {};
    throw new APIError(resp.status, e.code || "http_" + resp.status, e.message || String(text || resp.statusText));
  }
  return { data, headers: resp.headers };
};

AM.askToken = function () {
  document.getElementById("token-form").hidden = false;
};

// list returns the array in a list answer, bare or under a conventional key.
AM.list = function (data, ...keys) {
  if (Array.isArray(data)) return data;
  for (const k of keys.concat(["items", "data"])) if (data && Array.isArray(data[k])) return data[k];
  return [];
};

// sse follows a text/event-stream with fetch, so the bearer token goes in a
// header (EventSource cannot send one). onEvent(type, data, meta) gets each
// event with its JSON data decoded (the data of a whole CloudEvent
// unwrapped, its type taken when the stream names none) and meta.time, when
// the event happened (the CloudEvent's time, else its data's). It reconnects after a drop, with
// onOpen called on every connection so the page can read what it missed.
// The returned function stops it.
AM.sse = function (path, onEvent, onOpen) {
  const ctl = new AbortController();
  let stopped = false;
  let delay = 500;
  const last = { id: "" }; // the last event's id: a reconnection resumes after it
  const run = async () => {
    while (!stopped) {
      try {
        const headers = authHeaders({ Accept: "text/event-stream" });
        if (last.id) headers["Last-Event-ID"] = last.id;
        const resp = await fetch(path, { headers, signal: ctl.signal });
        if (resp.status === 401) AM.askToken();
        if (!resp.ok || !resp.body) throw new Error("events: HTTP " + resp.status);
        AM.setLive(true);
        delay = 500;
        if (onOpen) onOpen();
        await readEvents(resp.body, onEvent, last);
      } catch (e) {
        if (stopped) return;
      }
      AM.setLive(false);
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 10000);
    }
  };
  run();
  return () => { stopped = true; ctl.abort(); };
};

async function readEvents(body, onEvent, last) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "", type = "", data = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, "");
      buf = buf.slice(nl + 1);
      if (line === "") {
        if (data.length) dispatch(type, data.join("\n"), onEvent);
        type = ""; data = [];
      } else if (line.startsWith("event:")) type = line.slice(6).trim();
      else if (line.startsWith("id:")) last.id = line.slice(3).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
  }
}

function dispatch(type, raw, onEvent) {
  let data = raw;
  const meta = { time: "" };
  try { data = JSON.parse(raw); } catch (_) { /* plain text data */ }
  if (data && typeof data === "object" && data.specversion && "data" in data) {
    type = type || data.type;
    meta.time = data.time || "";
    data = data.data;
  }
  if (!meta.time && data && typeof data === "object") meta.time = data.at || data.time || data.timestamp || "";
  try { onEvent(type || "message", data, meta); } catch (e) { console.error(e); }
}

AM.setLive = function (on) {
  const el = document.getElementById("live");
  if (el) el.classList.toggle("on", on);
};

// Page lifecycle: the current page's cleanups run when the route changes.
let cleanups = [];
AM.onLeave = (fn) => cleanups.push(fn);
AM.leave = function () {
  for (const fn of cleanups) { try { fn(); } catch (_) { /* already gone */ } }
  cleanups = [];
};

// follow subscribes the current page to an event stream until it is left.
AM.follow = function (path, onEvent, onOpen) {
  AM.onLeave(AM.sse(path, onEvent, onOpen));
};

// debounce runs fn once after a burst of calls, so a flurry of events
// redraws a list once.
AM.debounce = function (fn, ms) {
  let t = null;
  return (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), ms); };
};

// Formatting.
AM.ms = function (n) {
  if (n === undefined || n === null || n === "") return "–";
  n = Number(n);
  if (n < 1000) return Math.round(n) + " ms";
  if (n < 60000) return (n / 1000).toFixed(1) + " s";
  const s = Math.round((n % 60000) / 1000);
  return Math.floor(n / 60000) + " min" + (s ? " " + s + " s" : "");
};

AM.ago = function (t) {
  if (!t) return "–";
  const s = Math.round((Date.now() - new Date(t).getTime()) / 1000);
  if (isNaN(s)) return String(t);
  if (s < 2) return "just now";
  if (s < 60) return s + " s ago";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  return new Date(t).toLocaleString();
};

AM.when = (t) => (t ? new Date(t).toLocaleString() : "–");

// clock is a time of day with seconds ("14:03:27"), or "–".
AM.clock = function (t) {
  const d = t ? new Date(t) : null;
  return d && !isNaN(d) ? d.toLocaleTimeString() : "–";
};

// plural counts: plural(1, "step") is "1 step", plural(3, "step") "3 steps".
AM.plural = (n, one, many) => n + " " + (Number(n) === 1 ? one : many || one + "s");

AM.pct = (x) => (x === undefined || x === null ? "–" : Math.round(Number(x) * 1000) / 10 + " %");

AM.bytes = function (n) {
  if (n === undefined || n === null) return "";
  if (n < 1024) return n + " B";
  if (n < 1 << 20) return (n / 1024).toFixed(1) + " KiB";
  return (n / (1 << 20)).toFixed(1) + " MiB";
};

AM.cost = (c) => (c ? "$" + Number(c).toFixed(4) : "–");

// tokens reads a usage's tokens, flat or nested ({prompt, completion}).
AM.tokens = function (u) {
  if (!u) return "–";
  const t = u.tokens || u;
  const p = t.prompt ?? t.prompt_tokens ?? t.input_tokens, c = t.completion ?? t.completion_tokens ?? t.output_tokens;
  if (p === undefined && c === undefined) return typeof t === "number" ? String(t) : "–";
  return (p || 0) + " in / " + (c || 0) + " out";
};

AM.costOf = (u) => (u ? AM.cost(u.cost_usd ?? u.cost ?? (u.usage && u.usage.cost_usd)) : "–");

// error shows what went wrong in place of a page or a panel.
AM.error = function (e) {
  const code = e && e.code ? e.code + ": " : "";
  return AM.h("div", { class: "error", role: "alert" }, code + (e && e.message ? e.message : String(e)));
};

AM.json = (v) => AM.h("pre", { class: "json" }, JSON.stringify(v, null, 2));
