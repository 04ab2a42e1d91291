// values.js: how a typed value (data_type, content_type_hint, value) is
// shown — text as text, images as thumbnails, folders and categories as
// trees, anything else as JSON.
"use strict";

(function () {
  const h = AM.h;

  AM.fileURL = (id, thumb) => "/api/files/" + encodeURIComponent(id) + "/content" + (thumb ? "?thumb=1" : "");

  // thumb is one image file's thumbnail, linking to the full image.
  AM.thumb = (id) =>
    h("a", { class: "thumb", href: AM.fileURL(id), target: "_blank", title: id, "data-file": id },
      h("img", { src: AM.fileURL(id, true), alt: id, loading: "lazy" }));

  // fileIDs lists the ids of a FileCollection (inline ones; a spilled one
  // says how many and where).
  function fileIDs(v) {
    if (Array.isArray(v)) return v;
    if (v && Array.isArray(v.ids)) return v.ids;
    return null;
  }

  function isImages(tv) {
    const hint = (tv.content_type_hint || (tv.value && tv.value.content_type) || "").toLowerCase();
    return hint.startsWith("image");
  }

  function files(tv) {
    const ids = fileIDs(tv.value);
    if (!ids) {
      const v = tv.value || {};
      return h("span", { class: "muted" }, (v.count ?? "?") + " files in collection " + (v.collection_ref || ""));
    }
    if (!ids.length) return h("span", { class: "muted" }, "no files");
    if (isImages(tv)) return h("div", { class: "thumbs" }, ids.slice(0, 48).map(AM.thumb), ids.length > 48 ? "… " + ids.length + " in all" : "");
    return h("ul", { class: "file-list" }, ids.map((id) => h("li", {}, h("a", { href: "#/files/" + encodeURIComponent(id) }, id))));
  }

  // tree draws {name: [file ids]} as folders with their files, images as
  // thumbnails.
  AM.tree = function (groups, kind) {
    const names = Object.keys(groups || {}).sort();
    if (!names.length) return h("span", { class: "muted" }, "empty");
    return h("ul", { class: "tree" }, names.map((name) =>
      h("li", { class: "folder", "data-folder": name },
        h("details", { open: true },
          h("summary", { class: kind }, name + (kind === "folder" ? "/ " : " "), h("span", { class: "muted" }, "(" + (groups[name] || []).length + ")")),
          h("div", { class: "thumbs" }, (groups[name] || []).map((id) => fileChip(id)))))));
  };

  // fileChip is a file of a folder: its thumbnail when it is an image (the
  // thumbnail request tells), else its id.
  function fileChip(id) {
    const a = AM.thumb(id);
    const img = a.querySelector("img");
    img.addEventListener("error", () => a.replaceChildren(h("span", { class: "file-id" }, id)), { once: true });
    return a;
  }

  // analysis shows each analysed file: its thumbnail, labels and caption;
  // the rest (features) is one click away.
  function analysis(v) {
    const items = (v && v.items) || [];
    if (!items.length) return AM.json(v);
    return h("div", { class: "analysis" },
      h("ul", { class: "analysis-items" }, items.slice(0, 48).map((it) =>
        h("li", {}, AM.thumb(it.id), h("div", {},
          h("div", {}, (it.labels || []).map((l) => h("span", { class: "badge" }, l))),
          h("div", { class: "muted" }, it.caption || ""))))),
      v.method ? h("div", { class: "muted" }, "by " + v.method) : "",
      h("details", {}, h("summary", {}, "all of it"), AM.json(v)));
  }

  // value shows one typed value.
  AM.value = function (tv) {
    if (!tv || typeof tv !== "object" || !("value" in tv)) return AM.json(tv);
    const v = tv.value;
    switch (tv.data_type) {
      case "TEXT":
        return h("div", { class: "text-value" }, String(v));
      case "FILE_IDS":
        return files(tv);
      case "FOLDER_RESULT":
        return h("div", {}, AM.tree(v && v.folders, "folder"), v && v.moved !== undefined ? h("div", { class: "muted" }, v.moved + " moved") : "");
      case "ANALYSIS_RESULT":
        return analysis(v);
      case "CATEGORIZATION":
        return h("div", {}, AM.tree(v && v.categories, "category"), v && v.method ? h("div", { class: "muted" }, "by " + v.method) : "");
      default:
        return AM.json(v);
    }
  };

  // values shows a map of named typed values as a definition list.
  AM.values = function (m) {
    const names = Object.keys(m || {});
    if (!names.length) return h("span", { class: "muted" }, "none");
    return h("dl", { class: "values" }, names.sort().map((n) => [
      h("dt", {}, n, " ", typeLabel(m[n])),
      h("dd", {}, AM.value(m[n])),
    ]));
  };

  function typeLabel(tv) {
    if (!tv || !tv.data_type) return "";
    return h("span", { class: "type" }, tv.data_type + (tv.content_type_hint ? "/" + tv.content_type_hint : ""));
  }

  // args shows a tool call's arguments: JSON text decoded when it is JSON.
  AM.args = function (a) {
    if (a === undefined || a === null || a === "") return h("span", { class: "muted" }, "none");
    if (typeof a === "string") {
      try { return AM.json(JSON.parse(a)); } catch (_) { return h("pre", {}, a); }
    }
    return AM.json(a);
  };
})();
