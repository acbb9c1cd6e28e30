// vectree in the browser: corpus, search, paper tree, page with highlighted quote, ask.
// Plain DOM code, no framework and no build step. Text from PDFs is untrusted: it only ever
// enters the page as text nodes (never innerHTML).
"use strict";

const TOKEN_KEY = "vectree-token";
const ASK_CACHE_KEY = "vectree-asked";
const ZOOMS = [0.5, 0.75, 1, 1.25, 1.5, 2, 3];
const BASE_PAGE_WIDTH = 760; // CSS pixels of a page at zoom 1

const state = { auth: false, token: sessionStorage.getItem(TOKEN_KEY) || "", papers: null, seq: 0 };

// ---- small helpers ---------------------------------------------------------------------------
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const enc = encodeURIComponent;
const hashFor = (parts, params) => {
  const qs = params ? new URLSearchParams(Object.entries(params).filter(([, v]) => v !== null && v !== undefined && v !== "")).toString() : "";
  return "#/" + parts.map(enc).join("/") + (qs ? "?" + qs : "");
};
const pages = (p) => (p[0] === p[1] ? `p. ${p[0]}` : `pp. ${p[0]}–${p[1]}`);
const cleanSnippet = (s) => (s || "").replace(/…/g, " ").replace(/\s+/g, " ").trim();

class ApiError extends Error {
  constructor(status, detail) { super(detail); this.status = status; }
}

// ---- auth: ask for the token once, keep it for the tab ----------------------------------------
let tokenPrompt = null;
function askToken(message) {
  if (tokenPrompt) return tokenPrompt;
  const dialog = document.getElementById("token-dialog");
  const input = document.getElementById("token-input");
  document.getElementById("token-error").textContent = message || "";
  tokenPrompt = new Promise((resolve) => {
    const form = document.getElementById("token-form");
    const done = (ev) => {
      ev.preventDefault();
      const value = input.value.trim();
      if (!value) return;
      form.removeEventListener("submit", done);
      dialog.close();
      state.token = value;
      sessionStorage.setItem(TOKEN_KEY, value);
      tokenPrompt = null;
      resolve(value);
    };
    form.addEventListener("submit", done);
    dialog.addEventListener("cancel", (ev) => ev.preventDefault()); // no data without a token
    dialog.showModal();
    input.focus();
  });
  return tokenPrompt;
}

async function api(path, opts = {}) {
  const headers = Object.assign({}, opts.headers || {});
  if (state.auth) headers.Authorization = "Bearer " + (state.token || (await askToken()));
  const response = await fetch(path, { method: opts.method || "GET", headers, body: opts.body });
  if (response.status === 401 && state.auth) {
    state.token = "";
    sessionStorage.removeItem(TOKEN_KEY);
    await askToken("That token was not accepted; try again.");
    return api(path, opts);
  }
  if (!response.ok) {
    let detail = response.statusText;
    try {
      const body = await response.json();
      detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
    } catch (_) { /* not JSON */ }
    throw new ApiError(response.status, detail);
  }
  return opts.blob ? response.blob() : response.json();
}

async function papers() {
  if (!state.papers) state.papers = await api("corpus");
  return state.papers;
}

function paperSelect(corpus, selected, label) {
  return h("select", { name: "paper", "aria-label": label },
    h("option", { value: "" }, "All papers"),
    corpus.papers.map((p) => h("option", { value: p.doc_id, selected: p.doc_id === selected }, p.title)));
}

// ---- rendering a view ------------------------------------------------------------------------
function show(seq, name, ...nodes) {
  if (seq !== state.seq) return false; // the user moved on while this view was loading
  const main = document.getElementById("view");
  main.replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined && n !== false));
  document.body.dataset.view = name;
  document.body.dataset.rendered = name;
  performance.mark("vectree:rendered:" + name);
  return true;
}

function errorBox(err) {
  return h("div", { class: "error", role: "alert" },
    err instanceof ApiError ? `Error ${err.status}: ${err.message}` : `Error: ${err.message || err}`);
}

// ---- corpus ----------------------------------------------------------------------------------
async function viewCorpus(seq) {
  state.papers = null; // the corpus page always shows the store as it is now
  const c = await papers();
  const snap = c.snapshot;
  const rows = c.papers.map((p) => {
    const frac = p.verified_fraction === null ? null : Math.round(p.verified_fraction * 100);
    return h("tr", { dataset: { doc: p.doc_id } },
      h("td", {}, h("a", { href: hashFor(["paper", p.doc_id]), class: "paper-title" }, p.title),
        h("div", { class: "muted small" }, (p.authors || []).join(", "))),
      h("td", { class: "num" }, p.pages),
      h("td", {},
        frac === null ? h("span", { class: "muted" }, "no tree") : [
          h("div", { class: "bar", title: `${p.verified} verified, ${p.repaired} repaired, ${p.unverified} unverified` },
            h("span", { style: `width:${frac}%` })),
          h("span", { class: "small" }, `${frac}% of ${p.sections} sections`)]),
      h("td", { class: "small" }, (p.parsed_at || "").replace("T", " ").replace("+00:00", " UTC"),
        p.parse_seconds !== null && p.parse_seconds !== undefined ? h("div", { class: "muted" }, `parsed in ${p.parse_seconds.toFixed(2)} s`) : null));
  });
  const quarantined = c.quarantined.length
    ? h("table", { class: "grid", id: "quarantined" },
      h("thead", {}, h("tr", {}, h("th", {}, "file"), h("th", {}, "status"), h("th", {}, "reason"))),
      h("tbody", {}, c.quarantined.map((q) => h("tr", {},
        h("td", {}, (q.source_path || q.doc_id).split("/").pop()), h("td", {}, h("span", { class: "badge bad" }, q.status)),
        h("td", {}, q.reason || "")))))
    : h("p", { class: "muted" }, "No quarantined files.");
  show(seq, "corpus",
    h("h1", {}, "Corpus"),
    h("p", { class: "muted" }, `${c.papers.length} papers · store ${c.store} · `,
      snap ? `search snapshot ${snap.id}${snap.created_at ? " (" + snap.created_at.replace("T", " ").replace("+00:00", " UTC") + ")" : ""}` : "no search index yet"),
    h("table", { class: "grid", id: "papers" },
      h("thead", {}, h("tr", {}, h("th", {}, "paper"), h("th", { class: "num" }, "pages"), h("th", {}, "verified tree"), h("th", {}, "indexed"))),
      h("tbody", {}, rows)),
    h("h2", {}, "Quarantined files"),
    quarantined);
}

// ---- search ----------------------------------------------------------------------------------
function moveFocus(list, ev) {
  const items = [...list.querySelectorAll(".result")];
  const at = items.indexOf(document.activeElement);
  if (ev.key === "ArrowDown" || ev.key === "j") { ev.preventDefault(); (items[at + 1] || items[at] || items[0])?.focus(); }
  if (ev.key === "ArrowUp" || ev.key === "k") { ev.preventDefault(); (at > 0 ? items[at - 1] : items[0])?.focus(); }
  if (ev.key === "Enter" && at >= 0) { ev.preventDefault(); location.hash = items[at].dataset.href; }
}

async function viewSearch(seq, _parts, params) {
  const q = params.get("q") || "";
  const paper = params.get("paper") || "";
  const corpus = await papers();
  const input = h("input", { type: "search", name: "q", value: q, placeholder: "What are you looking for?", "aria-label": "query", autocomplete: "off" });
  const form = h("form", { class: "bar-form", id: "search-form", onsubmit: (ev) => {
    ev.preventDefault();
    location.hash = hashFor(["search"], { q: input.value.trim(), paper: form.elements.paper.value });
  } }, input, paperSelect(corpus, paper, "filter by paper"), h("button", { type: "submit" }, "Search"));
  const list = h("ol", { class: "results", id: "results", onkeydown: (ev) => moveFocus(list, ev) });
  input.addEventListener("keydown", (ev) => { if (ev.key === "ArrowDown") { ev.preventDefault(); list.querySelector(".result")?.focus(); } });
  if (!q) {
    show(seq, "search", h("h1", {}, "Search"), form, h("p", { class: "muted" }, "Layer 0: papers and their sections, by hybrid BM25 + embedding search. ↑/↓ move through results, Enter opens one, / focuses the box."));
    input.focus();
    return;
  }
  const params2 = new URLSearchParams({ q, k: "10" });
  if (paper) params2.append("paper", paper);
  const res = await api("search/entries?" + params2);
  for (const r of res.results) {
    const href = hashFor(["paper", r.doc_id]);
    list.append(h("li", { class: "result", tabindex: "0", dataset: { doc: r.doc_id, href } },
      h("div", { class: "result-head" }, h("a", { href, tabindex: "-1", class: "paper-title" }, r.title),
        h("span", { class: "score", title: "fused score" }, r.score.toFixed(3))),
      h("p", { class: "snippet" }, r.snippet),
      r.sections.length ? h("ul", { class: "sections" }, r.sections.map((s) => h("li", {},
        h("a", { href: hashFor(["paper", r.doc_id], { node: s.node_id }), tabindex: "-1" }, s.title), " ",
        h("a", { href: hashFor(["page", r.doc_id, String(s.pages[0])]), tabindex: "-1", class: "pages" }, pages(s.pages)),
        s.snippet ? h("div", { class: "muted small" }, s.snippet) : null))) : null));
  }
  show(seq, "search", h("h1", {}, "Search"), form,
    h("p", { class: "muted" }, `${res.results.length} result${res.results.length === 1 ? "" : "s"} for “${q}”`), list);
  list.querySelector(".result")?.focus();
}

// ---- paper: collapsible verified tree + within-paper search -------------------------------------
const MARKS = {
  verified: ["✓", "verified against the page text"],
  repaired: ["↻", "repaired, then verified"],
  unverified: ["✗", "unverified"],
};

function treeNode(doc, node, children, openNode) {
  const [sym, label] = MARKS[node.mark];
  const kids = children.get(node.node_id) || [];
  const head = [
    h("span", { class: `mark ${node.mark}`, title: node.reason ? `${label}: ${node.reason}` : label, "aria-label": label }, sym),
    h("span", { class: "node-title" }, node.title), " ",
    h("a", { href: hashFor(["page", doc, String(node.pages[0])]), class: "pages" }, pages(node.pages)),
    node.reason && node.mark !== "verified" ? h("span", { class: `reason ${node.mark}` }, node.reason) : null,
  ];
  const body = [node.summary ? h("p", { class: "summary" }, node.summary) : null,
    kids.length ? h("ul", { class: "tree" }, kids.map((k) => treeNode(doc, k, children, openNode))) : null];
  const open = openNode && (node.node_id === openNode || hasDescendant(node, openNode, children));
  return h("li", { dataset: { node: node.node_id, mark: node.mark } },
    h("details", { open }, h("summary", {}, head), body));
}

function hasDescendant(node, id, children) {
  return (children.get(node.node_id) || []).some((k) => k.node_id === id || hasDescendant(k, id, children));
}

async function viewPaper(seq, parts, params) {
  const doc = parts[0];
  const q = params.get("q") || "";
  const openNode = params.get("node");
  const [paper, within] = await Promise.all([
    api(`papers/${enc(doc)}/sections`),
    q ? api(`papers/${enc(doc)}/search?` + new URLSearchParams({ q, k: "8" })) : null,
  ]);
  const children = new Map();
  for (const n of paper.nodes) {
    if (!children.has(n.parent_id)) children.set(n.parent_id, []);
    children.get(n.parent_id).push(n);
  }
  const root = paper.nodes.find((n) => n.level === 0);
  const top = root ? children.get(root.node_id) || [] : [];
  const counts = { verified: 0, repaired: 0, unverified: 0 };
  paper.nodes.filter((n) => n.level > 0).forEach((n) => counts[n.mark]++);
  const tree = h("ul", { class: "tree", id: "tree" }, top.map((n) => treeNode(doc, n, children, openNode)));
  const input = h("input", { type: "search", name: "q", value: q, placeholder: "Search within this paper", "aria-label": "search within paper" });
  const form = h("form", { class: "bar-form", id: "within-form", onsubmit: (ev) => {
    ev.preventDefault();
    location.hash = hashFor(["paper", doc], { q: input.value.trim() });
  } }, input, h("button", { type: "submit" }, "Search"));
  const hits = within ? h("ol", { class: "results", id: "within-results", onkeydown: (ev) => moveFocus(hits, ev) },
    within.results.map((r) => {
      const page = r.page || (r.pages || [])[0];
      const href = hashFor(["page", doc, String(page)], { quote: cleanSnippet(r.snippet) });
      return h("li", { class: "result", tabindex: "0", dataset: { href } },
        h("div", { class: "result-head" }, h("a", { href, tabindex: "-1" }, `p. ${page}`),
          r.section ? h("span", { class: "muted" }, " · " + r.section) : null,
          h("span", { class: "score" }, Number(r.score).toFixed(3))),
        h("p", { class: "snippet" }, r.snippet));
    })) : null;
  show(seq, "paper",
    h("p", { class: "crumbs" }, h("a", { href: "#/" }, "Corpus"), " / paper"),
    h("h1", {}, paper.title),
    h("p", { class: "muted" }, [(paper.authors || []).join(", "), `${paper.pages} pages`].filter(Boolean).join(" · "), " · ",
      h("a", { href: hashFor(["page", doc, "1"]) }, "open page 1"), " · ",
      h("a", { href: hashFor(["ask"], { paper: doc }) }, "ask about this paper")),
    form,
    within ? h("section", {}, h("h2", {}, `Passages for “${q}” (${within.method})`), hits) : null,
    h("h2", {}, "Section tree"),
    h("p", { class: "legend small" },
      h("span", { class: "mark verified" }, "✓"), ` verified ${counts.verified} · `,
      h("span", { class: "mark repaired" }, "↻"), ` repaired ${counts.repaired} · `,
      h("span", { class: "mark unverified" }, "✗"), ` unverified ${counts.unverified} `,
      h("button", { type: "button", class: "link", onclick: () => tree.querySelectorAll("details").forEach((d) => (d.open = true)) }, "expand all"),
      h("button", { type: "button", class: "link", onclick: () => tree.querySelectorAll("details").forEach((d) => (d.open = false)) }, "collapse all")),
    top.length ? tree : h("p", { class: "muted" }, "This paper has no section tree."));
  if (within) hits.querySelector(".result")?.focus();
}

// ---- page: image + highlight boxes, zoom, prev/next --------------------------------------------
let pageImageUrl = null;

async function viewPage(seq, parts, params) {
  const [doc, pageStr] = parts;
  const page = parseInt(pageStr, 10);
  const quote = params.get("quote") || "";
  const zoom = ZOOMS.includes(Number(params.get("zoom"))) ? Number(params.get("zoom")) : 1;
  const dpi = Math.max(30, Math.min(200, Math.round(96 * zoom * (window.devicePixelRatio || 1))));
  const [paper, blob, found] = await Promise.all([
    api(`papers/${enc(doc)}/sections`),
    api(`papers/${enc(doc)}/pages/${page}/image.png?dpi=${dpi}`, { blob: true }),
    quote ? api(`papers/${enc(doc)}/pages/${page}/boxes?` + new URLSearchParams({ quote })) : null,
  ]);
  if (pageImageUrl) URL.revokeObjectURL(pageImageUrl);
  pageImageUrl = URL.createObjectURL(blob);
  const go = (p, z) => hashFor(["page", doc, String(p)], { quote: p === page ? quote : null, zoom: z === 1 ? null : z });
  const zi = ZOOMS.indexOf(zoom);
  const frame = h("div", { class: "page-frame", id: "page-frame", style: `width:${Math.round(BASE_PAGE_WIDTH * zoom)}px` });
  const img = h("img", { src: pageImageUrl, alt: `page ${page} of ${paper.title}`, id: "page-image" });
  frame.append(img);
  if (found) {
    for (const [x0, y0, x1, y1] of found.boxes) {
      // PDF points of the rendered page -> percentages of the image, so zoom needs no recomputation
      frame.append(h("div", { class: "hl", style:
        `left:${(100 * x0) / found.width}%;top:${(100 * y0) / found.height}%;` +
        `width:${(100 * (x1 - x0)) / found.width}%;height:${(100 * (y1 - y0)) / found.height}%` }));
    }
  }
  const navLink = (p, label, key) => (p >= 1 && p <= paper.pages
    ? h("a", { href: go(p, zoom), class: "button", "aria-keyshortcuts": key }, label)
    : h("span", { class: "button disabled", "aria-disabled": "true" }, label));
  const zoomLink = (z, label) => (z ? h("a", { href: go(page, z), class: "button" }, label) : h("span", { class: "button disabled" }, label));
  const status = found
    ? h("p", { class: `quote-status ${found.match}`, id: "quote-status" },
      found.match === "none" ? "The quote was not found on this page." :
        `Highlighted: ${found.boxes.length} box${found.boxes.length === 1 ? "" : "es"} (${found.match === "exact" ? "exact match" : `partial match, ${Math.round(found.coverage * 100)}% of the quote`}).`)
    : null;
  const loaded = new Promise((resolve) => { img.onload = resolve; img.onerror = resolve; });
  show(seq, "page",
    h("p", { class: "crumbs" }, h("a", { href: "#/" }, "Corpus"), " / ", h("a", { href: hashFor(["paper", doc]) }, paper.title)),
    h("div", { class: "toolbar" },
      navLink(page - 1, "← previous", "ArrowLeft"),
      h("span", { class: "page-no" }, `page ${page} of ${paper.pages}`),
      navLink(page + 1, "next →", "ArrowRight"),
      h("span", { class: "spacer" }),
      zoomLink(ZOOMS[zi - 1], "−"), h("span", { class: "zoom" }, `${Math.round(zoom * 100)}%`), zoomLink(ZOOMS[zi + 1], "+")),
    quote ? h("blockquote", { class: "quote" }, quote) : null,
    status,
    frame);
  await loaded;
  if (seq === state.seq) {
    document.body.dataset.rendered = "page-image";
    performance.mark("vectree:rendered:page-image");
    frame.querySelector(".hl")?.scrollIntoView({ block: "nearest" });
  }
}

// ---- ask -------------------------------------------------------------------------------------
function askCache() {
  try { return JSON.parse(sessionStorage.getItem(ASK_CACHE_KEY) || "{}"); } catch (_) { return {}; }
}

function renderAnswer(a, titles) {
  const cites = a.citations || [];
  const answer = h("p", { class: "answer", id: "answer" }, a.answer || "(no answer)",
    cites.map((_, i) => h("a", { href: `#cite-${i + 1}`, class: "cite-ref", onclick: (ev) => {
      ev.preventDefault(); document.getElementById(`cite-${i + 1}`).scrollIntoView({ block: "center" });
    } }, `[${i + 1}]`)));
  const list = h("ol", { class: "citations", id: "citations" }, cites.map((c, i) => h("li", { id: `cite-${i + 1}`, dataset: { valid: String(!!c.valid) } },
    h("a", { class: "cite", href: hashFor(["page", c.doc_id, String(c.page)], { quote: c.quote }) },
      h("span", { class: "cite-no" }, `[${i + 1}]`), " ", titles[c.doc_id] || c.doc_id, ", ", `p. ${c.page}`),
    " ",
    c.valid ? h("span", { class: "badge ok", title: "the quote occurs on the cited page" }, "✓ quote found on the page")
      : h("span", { class: "badge bad", title: c.reason || "" }, "✗ " + (c.reason || "quote not found")),
    c.relevance == null ? null : h("span", { class: "badge evidence",
      title: "calibrated probability that this sentence is evidence for the question" }, `evidence ${c.relevance.toFixed(2)}`),
    h("blockquote", { class: "quote" }, c.quote))));
  // how sure the answer is, in the words of the CLI (vectree.commands.agent.confidence_line); an
  // abstention lists where one might look instead, with no citation marked as supporting
  let sure = null;
  if (a.abstained) {
    const maybe = a.possibly_relevant || [];
    sure = h("div", { class: "abstained", id: "abstained" },
      h("p", { class: "small" }, "No good evidence in the corpus: nothing below supports an answer."),
      maybe.length ? h("ul", { class: "possibly small" }, maybe.map((p) => h("li", {},
        p.page ? h("a", { href: hashFor(["page", p.doc_id, String(p.page)], p.text ? { quote: p.text } : {}) },
          titles[p.doc_id] || p.doc_id, `, p. ${p.page}`)
          : h("a", { href: hashFor(["paper", p.doc_id]) }, titles[p.doc_id] || p.title || p.doc_id),
        ` (relevance ${Number(p.relevance || 0).toFixed(2)})`))) : null);
  } else if (a.confidence != null) {
    const c = a.confidence;
    const strength = c >= 0.6 ? "strong" : c >= 0.35 ? "moderate" : "weak";
    sure = h("p", { class: `confidence small ${strength}`, id: "confidence",
      title: "calibrated probability that the short answer matches what an expert would answer" },
      `Answer confidence ${c.toFixed(2)} (${strength})` +
      (strength === "weak" ? ": read the quoted evidence before relying on the short answer." : "."));
  }
  const steps = (a.trace && a.trace.steps) || [];
  const tokens = (a.trace && a.trace.tokens) || {};
  const total = Object.values(tokens).reduce((s, v) => s + v, 0);
  const trace = h("details", { class: "trace", id: "trace" },
    h("summary", {}, `Tool trace: ${steps.length} call${steps.length === 1 ? "" : "s"}, ${total} tokens (${a.agent} agent, ${a.seconds} s)`),
    h("p", { class: "small" }, "Tokens per disclosure layer: ",
      ["layer0", "layer1", "layer2"].map((k, i) => h("span", { class: "layer-tokens" }, `layer ${i}: ${tokens[k] || 0}`))),
    h("table", { class: "grid small" },
      h("thead", {}, h("tr", {}, ["#", "tool", "layer", "arguments", "tokens", "ms"].map((t) => h("th", {}, t)))),
      h("tbody", {}, steps.map((s, i) => h("tr", { class: s.error ? "step-error" : "" },
        h("td", {}, i + 1), h("td", {}, h("code", {}, s.tool)), h("td", { class: "num" }, s.layer),
        h("td", {}, h("code", { class: "args" }, JSON.stringify(s.arguments)), s.error ? h("div", { class: "error small" }, s.error) : null),
        h("td", { class: "num" }, s.tokens), h("td", { class: "num" }, Math.round(s.ms)))))));
  return [answer, sure, cites.length ? h("h2", {}, "Citations") : h("p", { class: "muted" }, "No citations."), list, trace];
}

async function viewAsk(seq, _parts, params) {
  const q = params.get("q") || "";
  const paper = params.get("paper") || "";
  const corpus = await papers();
  const titles = Object.fromEntries(corpus.papers.map((p) => [p.doc_id, p.title]));
  const input = h("textarea", { name: "q", rows: "2", placeholder: "Ask a question about the papers", "aria-label": "question" }, q);
  const form = h("form", { class: "bar-form", id: "ask-form", onsubmit: (ev) => {
    ev.preventDefault();
    if (input.value.trim()) location.hash = hashFor(["ask"], { q: input.value.trim(), paper: form.elements.paper.value });
  } }, input, paperSelect(corpus, paper, "ask within paper"), h("button", { type: "submit" }, "Ask"));
  input.addEventListener("keydown", (ev) => { if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); form.requestSubmit(); } });
  const head = [h("h1", {}, "Ask"), form];
  if (!q) {
    show(seq, "ask", ...head, h("p", { class: "muted" }, "The agent searches, reads section trees and opens pages; every citation is checked against its page."));
    input.focus();
    return;
  }
  const key = JSON.stringify([q, paper]);
  let answer = askCache()[key];
  if (!answer) {
    const started = performance.now();
    const elapsed = h("span", { class: "elapsed" }, "0.0 s");
    const progress = h("div", { class: "progress", id: "progress", role: "status", "aria-live": "polite" },
      h("span", { class: "spinner", "aria-hidden": "true" }), "Working: searching the corpus, reading trees and pages… ", elapsed);
    if (!show(seq, "ask-progress", ...head, progress)) return;
    const timer = setInterval(() => { elapsed.textContent = ((performance.now() - started) / 1000).toFixed(1) + " s"; }, 100);
    try {
      answer = await api("ask", { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify(paper ? { question: q, paper } : { question: q }) });
    } finally {
      clearInterval(timer);
    }
    const cache = askCache();
    cache[key] = answer;
    sessionStorage.setItem(ASK_CACHE_KEY, JSON.stringify(cache));
  }
  show(seq, "ask", ...head, ...renderAnswer(answer, titles));
}

// ---- router ----------------------------------------------------------------------------------
const VIEWS = { corpus: viewCorpus, search: viewSearch, paper: viewPaper, page: viewPage, ask: viewAsk };

async function route() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const cut = raw.indexOf("?"); // a question may hold "?" itself: split at the first only
  const path = cut < 0 ? raw : raw.slice(0, cut);
  const qs = cut < 0 ? "" : raw.slice(cut + 1);
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const name = VIEWS[parts[0]] ? parts[0] : "corpus";
  const seq = ++state.seq;
  document.querySelectorAll("nav a[data-nav]").forEach((a) => a.classList.toggle("active", a.dataset.nav === name));
  try {
    await VIEWS[name](seq, parts.slice(1), new URLSearchParams(qs || ""));
  } catch (err) {
    show(seq, "error", errorBox(err));
  }
}

document.addEventListener("keydown", (ev) => {
  const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement?.tagName || "");
  if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (ev.key === "/") { ev.preventDefault(); (document.querySelector("#search-form input") || document.querySelector("#quick-search input")).focus(); }
  if (document.body.dataset.view === "page") {
    const pick = { ArrowLeft: "previous", ArrowRight: "next", "+": "+", "=": "+", "-": "−" }[ev.key];
    const link = pick && [...document.querySelectorAll(".toolbar a.button")].find((a) => a.textContent.includes(pick));
    if (link) { ev.preventDefault(); location.hash = link.getAttribute("href"); }
  }
});

document.getElementById("quick-search").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const q = ev.target.elements.q.value.trim();
  if (q) location.hash = hashFor(["search"], { q });
});

window.addEventListener("hashchange", route);
(async () => {
  try {
    state.auth = (await (await fetch("web/config")).json()).auth;
  } catch (err) {
    show(state.seq, "error", errorBox(err));
    return;
  }
  route();
})();
