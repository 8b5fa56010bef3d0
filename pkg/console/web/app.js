// accord-console: renders the View the server streams on /api/stream?QUERY (server-sent events: the
// whole View, "view", then what changed in it, "update"). The page tells the server its view (filters and page) in the stream's query
// parameters and reopens the stream when it changes; the server sends only what that view shows.
"use strict";

let playground = false;

// query is the page's view: the filters and the page of node cards (see pkg/console/cut.go).
const query = { node: "", namespace: "", workload: "", attention: false, page: 1 };

// stats keeps the last updates' sizes and timings (performance.now() milliseconds): received when
// the event arrived, rendered when the DOM was updated, painted at the next frame after it. The
// header shows the last one; window.accordConsole exposes them (test/scale measures with them).
const stats = [];
window.accordConsole = { stats };

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function say(text) { document.getElementById("message").textContent = text; }

async function post(path, body) {
  const resp = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  if (!resp.ok) throw new Error(path + ": " + resp.status + " " + (await resp.text()).trim());
  return resp.json();
}

function resourceChip(node, r) {
  const label = r.name + (r.score ? " (" + r.score + ")" : "");
  const attrs = { class: "res", "data-resource": r.name, "data-enabled": String(r.enabled) };
  if (!playground) return el("span", Object.assign(attrs, { text: label }));
  attrs.title = (r.enabled ? "Disable " : "Enable ") + r.name + " on " + node.name;
  attrs.type = "button";
  attrs.onclick = () => post("/api/playground/resource", { node: node.name, resource: r.name, enabled: !r.enabled })
    .then(() => say((r.enabled ? "disabled " : "enabled ") + r.name + " on " + node.name))
    .catch((err) => say(err.message));
  return el("button", attrs, label);
}

function loadBars(load) {
  const box = el("div", { class: "load" });
  if (!load.reported) { box.append(el("div", { class: "stale", text: "no NodeMetric reported" })); return box; }
  if (load.stale) box.append(el("div", { class: "stale", "data-stale": "true", text: "stale metric (reported " + new Date(load.updatedAt).toLocaleTimeString() + "): ignored" }));
  for (const r of load.resources) {
    const bar = el("div", { class: "bar" + (r.over ? " over" : "") }, el("div", { class: "fill", style: "width:" + Math.min(r.percent, 100) + "%" }));
    if (r.threshold > 0) bar.append(el("div", { class: "threshold", style: "left:" + Math.min(r.threshold, 100) + "%", title: "threshold " + r.threshold + "%" }));
    box.append(el("div", { class: "loadrow", "data-resource": r.name }, el("span", { text: r.name }), bar, el("span", { text: r.percent + "%" + (r.estimatedPercent !== r.percent ? " (est. " + r.estimatedPercent + "%)" : ""), title: "reported " + r.percent + "%, estimated " + r.estimatedPercent + "% (" + (load.estimatedPods || 0) + " pods since the report, " + (load.gonePods || 0) + " gone)" })));
  }
  return box;
}

function loadControl(node) {
  const cpu = el("input", { type: "number", min: "0", max: "100", value: "50", "aria-label": "cpu %", class: "cpu" });
  const mem = el("input", { type: "number", min: "0", max: "100", value: "30", "aria-label": "memory %", class: "memory" });
  const set = el("button", { type: "button", class: "setload", onclick: () => post("/api/playground/load", { node: node.name, cpu: Number(cpu.value), memory: Number(mem.value) })
    .then(() => say("set the simulated load of " + node.name))
    .catch((err) => say(err.message)) }, "set");
  return el("div", { class: "loadctl", "data-node": node.name }, "baseline load cpu", cpu, "% mem", mem, "%", set);
}

// cards keeps one element per node for the page's life. A node that changed has its card's contents
// redrawn in place; the load control is never detached, so what the user typed, the focus and the
// element a click is aimed at all survive the updates the stream brings every few seconds.
const cards = new Map();

function renderNodes(nodes) {
  const grid = document.getElementById("nodes");
  const seen = new Set(nodes.map((n) => n.name));
  for (const [name, c] of cards) if (!seen.has(name)) { c.card.remove(); cards.delete(name); }
  nodes.forEach((n, i) => {
    let c = cards.get(n.name);
    if (!c) {
      c = { key: "", card: el("div", { "data-node": n.name }), control: null };
      cards.set(n.name, c);
    }
    if (playground && !c.control) c.card.append(c.control = loadControl(n));
    if (!playground && c.control) { c.control.remove(); c.control = null; }
    const key = JSON.stringify(n) + playground;
    if (c.key !== key) {
      c.key = key;
      c.card.className = "node" + (n.ready || n.restricted ? "" : " notready");
      while (c.card.firstChild && c.card.firstChild !== c.control) c.card.firstChild.remove();
      c.card.insertBefore(cardContents(n), c.control);
    }
    if (grid.children[i] !== c.card) grid.insertBefore(c.card, grid.children[i] || null);
  });
}

// cardContents is everything on a node's card but the load control.
function cardContents(n) {
  const parts = document.createDocumentFragment();
  if (n.restricted) {
    // The user may not read nodes, ClusterScopedResources or NodeMetrics: name and own pods only.
    parts.append(el("h3", {}, el("span", { text: n.name }), el("span", { class: "podcount", text: n.podCount + " of your pods" })));
    parts.append(podList(n));
    return parts;
  }
  parts.append(el("h3", {}, el("span", { text: n.name }), el("span", { class: "podcount", text: n.podCount + " pods" + (n.ready ? "" : " · NotReady") + (n.unschedulable ? " · cordoned" : "") })));
  if (n.violators) parts.append(el("div", { class: "violators", text: n.violators + (n.violators === 1 ? " pod requests" : " pods request") + " a resource the CR does not enable" }));
  const res = el("div", { class: "resources" });
  if (!n.hasCR) res.append(el("span", { class: "stale", text: "no ClusterScopedResource" }));
  for (const r of n.resources || []) res.append(resourceChip(n, r));
  parts.append(res, loadBars(n.load));
  for (const t of n.taints || []) parts.append(el("div", { class: "taint", text: "taint " + t }));
  parts.append(podList(n));
  return parts;
}

// podList lists the pods the card holds, and says how many more the filter matches.
function podList(n) {
  const list = el("ul", { class: "pods" }, ...n.pods.map((p) => el("li", { class: p.terminating ? "terminating" : "", "data-pod": p.namespace + "/" + p.name, text: p.namespace + "/" + p.name + (p.phase === "Running" ? "" : " (" + (p.phase || "Pending") + ")") })));
  if (n.podCount > n.pods.length) list.append(el("li", { class: "more", text: "and " + (n.podCount - n.pods.length) + " more (filter by namespace or workload)" }));
  return list;
}

function rows(tableId, items, cells, emptyText) {
  const body = document.querySelector("#" + tableId + " tbody");
  const cols = document.querySelectorAll("#" + tableId + " thead th").length;
  if (items.length === 0) { body.replaceChildren(el("tr", {}, el("td", { class: "empty", colspan: String(cols), text: emptyText }))); return; }
  body.replaceChildren(...items.map((it) => {
    const c = cells(it);
    return el("tr", c.attrs, ...c.values.map((v) => el("td", { class: v[0], text: v[1] === undefined || v[1] === null || v[1] === "" ? "-" : String(v[1]) })));
  }));
}

// setQuery changes the view and reopens the stream with it.
function setQuery(changes) {
  Object.assign(query, changes);
  for (const k of ["node", "namespace", "workload"]) {
    const input = document.getElementById("filter-" + k);
    if (input.value.trim() !== query[k]) input.value = query[k];
  }
  document.getElementById("filter-attention").checked = query.attention;
  connect();
}

function renderAttention(a) {
  const nodes = document.getElementById("attention-nodes");
  const title = a.nodesTotal === 0 ? "no node needs attention" : a.nodesTotal + (a.nodesTotal === 1 ? " node needs" : " nodes need") + " attention" +
    (a.nodesTotal > a.nodes.length ? " (the " + a.nodes.length + " most urgent; tick “only nodes needing attention” for all)" : "");
  nodes.replaceChildren(el("h3", { text: title }), el("ul", { class: "attention" }, ...a.nodes.map((n) => {
    const why = [];
    if (n.violators) why.push(n.violators + (n.violators === 1 ? " violator" : " violators"));
    for (const o of n.over || []) why.push("over " + o);
    if (n.notReady) why.push("NotReady");
    if (n.stale) why.push("no fresh NodeMetric");
    return el("li", { "data-node": n.name }, el("button", { type: "button", class: "link", title: "show " + n.name, onclick: () => setQuery({ node: n.name, page: 1 }) }, n.name), ": " + why.join(", "));
  })));
  rows("attention-pending", a.pending, (g) => ({ attrs: { "data-reason": g.reason, "data-pods": g.pods.join(" ") },
    values: [["count", g.count], ["reason", g.reason || "not tried yet"], ["pods", g.pods.join(", ") + (g.count > g.pods.length ? ", …" : "")]] }), "no pending pods");
  rows("attention-evictions", a.evictions, (e) => ({ attrs: { "data-pod": e.namespace + "/" + e.pod },
    values: [["time", new Date(e.time).toLocaleTimeString()], ["pod", e.namespace + "/" + e.pod], ["node", e.node], ["plugin", e.plugin],
      ["replacement", e.replacement ? e.replacement + " → " + (e.replacementNode || "pending") : "evicted pod still there"]] }), "no evictions in flight");
  rows("attention-migrations", a.migrations, (m) => ({ attrs: { "data-migration": m.namespace + "/" + m.name, "data-phase": m.phase },
    values: [["migration", m.namespace + "/" + m.name], ["pod", m.pod], ["phase", m.phase], ["node", m.sourceNode], ["node", m.targetNode]] }), "no migrations in flight");
}

function render(view) {
  playground = view.playground;
  document.getElementById("mode").textContent = playground ? "playground: click a resource to toggle it" : "read-only";
  renderAttention(view.attention);
  const q = view.query;
  query.page = q.page;
  document.getElementById("page-info").textContent = "page " + q.page + " of " + view.pages + " · " + view.nodesMatched + " of " + view.nodesTotal + " nodes";
  document.getElementById("page-prev").disabled = q.page <= 1;
  document.getElementById("page-next").disabled = q.page >= view.pages;
  const namespaces = document.getElementById("namespaces");
  if (namespaces.dataset.key !== view.namespaces.join(" ")) {
    namespaces.dataset.key = view.namespaces.join(" ");
    namespaces.replaceChildren(...view.namespaces.map((ns) => el("option", { value: ns })));
  }
  renderNodes(view.nodes);
  rows("pending", view.pending, (p) => ({ attrs: { "data-pod": p.namespace + "/" + p.name },
    values: [["pod", p.namespace + "/" + p.name], ["phase", p.phase || "Pending"], ["reason", p.reason || "not tried yet"]] }), "no pending pods");
  document.getElementById("pending-count").textContent = view.pendingMatched > view.pending.length ? "the first " + view.pending.length + " of " + view.pendingMatched : "";
  rows("evictions", view.evictions, (e) => ({ attrs: { "data-pod": e.namespace + "/" + e.pod, "data-plugin": e.plugin },
    values: [["time", new Date(e.time).toLocaleTimeString()], ["pod", e.namespace + "/" + e.pod], ["node", e.node], ["plugin", e.plugin + " (" + e.profile + ")"],
      ["reason", e.held ? "held by " + e.held + ": " + e.reason : e.mode ? e.mode + ": " + e.reason : e.reason], ["predicted", e.predictedNode ? e.predictedNode + " (score " + e.score + ")" : ""],
      ["replacement", e.replacement ? e.replacement + " → " + (e.replacementNode || "pending") : ""]] }), "no evictions yet");
  rows("migrations", view.migrations, (m) => ({ attrs: { "data-migration": m.namespace + "/" + m.name, "data-phase": m.phase },
    values: [["migration", m.namespace + "/" + m.name], ["pod", m.pod], ["phase", m.phase], ["node", m.sourceNode], ["node", m.targetNode],
      ["reservation", m.reservation], ["replacement", m.replacement ? m.replacement + " → " + (m.replacementNode || "pending") : ""],
      ["reason", m.reason ? m.reason + (m.message ? ": " + m.message : "") : m.message]] }), "no pod migrations");
  document.getElementById("migrations-count").textContent = view.migrationsMatched > view.migrations.length ? "the newest " + view.migrations.length + " of " + view.migrationsMatched : "";
}

function explain() {
  const status = document.getElementById("explain-status");
  status.textContent = "running a dry-run cycle…";
  fetch("/api/explain").then(async (resp) => {
    if (!resp.ok) throw new Error((await resp.text()).trim());
    return resp.json();
  }).then((data) => {
    status.textContent = data.length + " candidate pods at " + new Date().toLocaleTimeString();
    rows("explain", data, (r) => ({ attrs: { "data-pod": r.namespace + "/" + r.pod, "data-verdict": r.verdict },
      values: [["profile", r.profile], ["plugin", r.plugin], ["pod", r.namespace + "/" + r.pod], ["node", r.node], ["verdict", r.verdict],
        ["blocked", r.blockedBy ? r.blockedBy + (r.simulationReason ? "/" + r.simulationReason : "") : ""], ["predicted", r.predictedNode],
        ["score", r.score === undefined ? "" : r.score + (r.currentNodeScore === undefined ? "" : " (here " + r.currentNodeScore + ")")],
        ["reason", [r.reason, r.message].filter(Boolean).join("; ")]] }), "no candidate pods");
  }).catch((err) => { status.textContent = "explain failed: " + err.message; });
}

let source = null;

// connect opens the stream for the current query (closing the previous one).
function connect() {
  const status = document.getElementById("status");
  if (source) source.close();
  const params = new URLSearchParams();
  for (const k of ["node", "namespace", "workload"]) if (query[k]) params.set(k, query[k]);
  if (query.attention) params.set("attention", "true");
  if (query.page > 1) params.set("page", String(query.page));
  const src = source = new EventSource("/api/stream" + (params.size ? "?" + params : ""));
  let view = null;
  const apply = (ev) => {
    if (src !== source) return;
    const s = { bytes: ev.data.length, received: performance.now() };
    status.textContent = "live"; status.dataset.state = "live";
    const data = JSON.parse(ev.data);
    if (ev.type === "view") view = data;
    else if (view) {
      // An update: the fields that changed, the cards that changed, the cards' order if it did.
      Object.assign(view, data.fields || {});
      const byName = new Map(view.nodes.map((n) => [n.name, n]));
      for (const c of data.cards || []) byName.set(c.name, c);
      view.nodes = (data.order || view.nodes.map((n) => n.name)).map((name) => byName.get(name));
    } else return;
    render(view);
    s.rendered = performance.now();
    requestAnimationFrame(() => setTimeout(() => {
      s.painted = performance.now();
      stats.push(s);
      if (stats.length > 100) stats.shift();
      document.getElementById("stats").textContent = "last update " + (s.bytes / 1024).toFixed(1) + " KiB, drawn in " + Math.round(s.painted - s.received) + " ms";
    }, 0));
  };
  src.addEventListener("view", apply);
  src.addEventListener("update", apply);
  src.onerror = () => { if (src === source) { status.textContent = "disconnected (retrying)"; status.dataset.state = "disconnected"; } };
}

// Filters apply after a pause in typing.
let typing = null;
for (const [id, key] of [["filter-node", "node"], ["filter-namespace", "namespace"], ["filter-workload", "workload"]]) {
  document.getElementById(id).addEventListener("input", (ev) => {
    clearTimeout(typing);
    typing = setTimeout(() => setQuery({ [key]: ev.target.value.trim(), page: 1 }), 300);
  });
}
document.getElementById("filter-attention").addEventListener("change", (ev) => setQuery({ attention: ev.target.checked, page: 1 }));
document.getElementById("filters").addEventListener("submit", (ev) => ev.preventDefault());
document.getElementById("filter-clear").addEventListener("click", () => setQuery({ node: "", namespace: "", workload: "", attention: false, page: 1 }));
document.getElementById("page-prev").addEventListener("click", () => setQuery({ page: Math.max(query.page - 1, 1) }));
document.getElementById("page-next").addEventListener("click", () => setQuery({ page: query.page + 1 }));
document.getElementById("explain-run").addEventListener("click", explain);
connect();
