// ragtap triage page: vanilla JavaScript, no build step, no dependencies.
//
// Every text that comes from the API (questions, documents, answers, models, users, notes...) is untrusted: it
// reaches the page only through textContent / text nodes (el() below), never through innerHTML or an attribute
// that the browser interprets as markup or script.  The server adds a Content-Security-Policy as a second line.
"use strict";

(() => {
  const METRICS = ["sdq", "sdrd", "sda", "qrd", "qa", "ard"];
  const VERDICTS = ["grounded", "parametric", "refusal", "unsupported_answer", "unscored"];
  const MEANING = {
    sdq: "supporting content ↔ question: low = the support does not address the question",
    sdrd: "supporting content ↔ best document: low = the support is not from the documents",
    sda: "supporting content ↔ answer: low = the answer does not follow its support",
    qrd: "question ↔ best document: low = retrieval returned off-topic documents",
    qa: "question ↔ answer: low = the answer does not address the question",
    ard: "answer ↔ best document (used without supporting content)",
  };
  const MAX_ROWS = 1000; // rows kept in the table; older ones are paged in again with "older"
  const LIVE_LIMIT = 200; // rows asked for per live poll
  const FILTER_KEYS = ["verdict", "poor_retrieval", "model", "from", "to", "user", "session", "q", "labelled"];

  const $ = (id) => document.getElementById(id);
  const state = {
    meta: null,
    rows: new Map(), // id -> row JSON
    order: [], // ids, newest first
    nextCursor: null,
    filters: {},
    selected: null,
    generation: 0, // bumps on every reload: answers to older requests are ignored
    polling: false,
    timer: null,
    // The API's bearer token, in this page's memory only: never in localStorage or a cookie (another page of the
    // origin, or a link, could read or overwrite it there), never from the address (#token=... is ignored).
    token: null,
  };

  // ---------------------------------------------------------------------------------------------- DOM helpers
  // el("td", {class: "x", text: "..."}, child, "text"...): strings become text nodes, never markup.
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = String(value);
      else if (key === "title") node.title = String(value);
      else if (key.startsWith("data-")) node.setAttribute(key, String(value));
      else if (["type", "name", "value", "checked", "disabled", "selected", "tabIndex", "htmlFor", "id", "rows"].includes(key)) node[key] = value;
      else throw new Error("el(): property not allowed: " + key);
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  const verdictClass = (v) => "verdict verdict-" + (VERDICTS.includes(v) ? v : "unknown");
  const fmtScore = (v) => (typeof v === "number" ? v.toFixed(2) : "–");
  const pad = (n) => String(n).padStart(2, "0");

  function fmtTime(seconds) {
    const d = new Date(seconds * 1000);
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }

  function localInputValue(ms) { // epoch ms -> the value of <input type="datetime-local"> (local time)
    const d = new Date(ms);
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }

  const UNIT_MS = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 604800e3 };

  // "1732440000000" (Grafana's ${__from}), "now-15m" / "now" (Grafana's relative times, as its dashboard links
  // send them), or ISO 8601 -> epoch ms; null when it is none of these.
  function toMillis(value) {
    if (!value) return null;
    if (/^\d+(\.\d+)?$/.test(value)) return Number(value);
    const relative = /^now(?:-(\d+)([smhdw]))?$/.exec(value);
    if (relative) return Date.now() - (relative[1] ? Number(relative[1]) * UNIT_MS[relative[2]] : 0);
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? null : ms;
  }

  // Grafana fills ${model:csv} with its "All" value or several models; the store filters one model: show all then.
  const ALL_MODELS = new Set([".*", "$__all", "All", "all"]);

  function safeHttpUrl(url) { // only http(s) links are ever put in an href
    try {
      const parsed = new URL(url, window.location.href);
      return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
    } catch (_) {
      return null;
    }
  }

  function setStatus(text) { $("status").textContent = text; }
  function showError(text) { $("error").textContent = text || ""; }

  // ---------------------------------------------------------------------------------------------------- API
  class Unauthorized extends Error {}

  async function api(path, options = {}) {
    const headers = { Accept: "application/json", ...(options.headers || {}) };
    const token = state.token;
    if (token) headers.Authorization = "Bearer " + token;
    const response = await fetch("api/" + path, { ...options, headers, credentials: "same-origin", cache: "no-store" });
    let body = null;
    try {
      body = await response.json();
    } catch (_) {
      body = null;
    }
    if (response.status === 401) {
      askForToken(token ? "that token was not accepted" : "");
      throw new Unauthorized((body && body.error) || "unauthorized");
    }
    if (!response.ok) throw new Error((body && body.error) || `HTTP ${response.status}`);
    return body;
  }

  function askForToken(message) {
    $("auth").hidden = false;
    $("auth-error").textContent = message || "";
    $("token").focus();
  }

  // ------------------------------------------------------------------------------------------------ filters
  function filtersFromUrl() {
    const params = new URLSearchParams(window.location.search);
    const filters = {};
    for (const key of FILTER_KEYS) {
      const values = params.getAll(key).filter((v) => v.trim() !== "");
      if (values.length) filters[key] = values.join(",");
    }
    if (filters.model !== undefined && (ALL_MODELS.has(filters.model) || /[,|{}]/.test(filters.model))) delete filters.model;
    if (filters.to === "now") delete filters.to; // open-ended: live updates keep coming
    for (const key of ["from", "to"]) {
      if (filters[key] !== undefined) {
        const ms = toMillis(filters[key]);
        if (ms === null) delete filters[key];
        else filters[key] = String(Math.round(ms));
      }
    }
    return { filters, id: params.get("id") };
  }

  function filtersToForm(filters) {
    const chosen = (filters.verdict || "").split(",");
    for (const box of document.querySelectorAll("#verdicts input")) box.checked = chosen.includes(box.value);
    $("f-poor").value = filters.poor_retrieval || "";
    $("f-labelled").value = filters.labelled || "";
    $("f-model").value = filters.model || "";
    $("f-user").value = filters.user || "";
    $("f-session").value = filters.session || "";
    $("f-q").value = filters.q || "";
    $("f-from").value = filters.from ? localInputValue(Number(filters.from)) : "";
    $("f-to").value = filters.to ? localInputValue(Number(filters.to)) : "";
  }

  function filtersFromForm() {
    const filters = {};
    const verdicts = [...document.querySelectorAll("#verdicts input:checked")].map((box) => box.value);
    if (verdicts.length) filters.verdict = verdicts.join(",");
    const text = { poor_retrieval: "f-poor", labelled: "f-labelled", model: "f-model", user: "f-user", session: "f-session", q: "f-q" };
    for (const [key, id] of Object.entries(text)) {
      const value = $(id).value.trim();
      if (value) filters[key] = value;
    }
    for (const [key, id] of [["from", "f-from"], ["to", "f-to"]]) {
      const value = $(id).value;
      if (value) filters[key] = String(new Date(value).getTime()); // datetime-local is local time
    }
    return filters;
  }

  function writeUrl() {
    const params = new URLSearchParams();
    for (const key of FILTER_KEYS) if (state.filters[key]) params.set(key, state.filters[key]);
    if (state.selected) params.set("id", state.selected);
    const query = params.toString();
    window.history.replaceState(null, "", window.location.pathname + (query ? "?" + query : ""));
  }

  function queryString(filters, extra) {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(filters)) if (value) params.set(key, value);
    for (const [key, value] of Object.entries(extra || {})) if (value !== null && value !== undefined) params.set(key, value);
    return params.toString();
  }

  // -------------------------------------------------------------------------------------------------- table
  function scoreCell(row, metric) {
    const value = row.scores[metric];
    const passed = row.passed[metric];
    const cls = typeof value !== "number" ? "na" : passed ? "pass" : "fail";
    const threshold = row.thresholds[metric];
    const title = typeof value === "number"
      ? `${metric.toUpperCase()} ${value.toFixed(3)} ${passed ? "≥" : "<"} threshold ${threshold.toFixed(2)}`
      : `${metric.toUpperCase()}: no score`;
    return el("td", { class: "score " + cls, "data-metric": metric, title }, fmtScore(value));
  }

  function labelText(label) {
    if (!label) return "";
    if (label.verdict_right) return "right";
    return label.right_verdict ? "wrong → " + label.right_verdict : "wrong";
  }

  function rowNode(row) {
    const question = row.question + (row.question_clipped ? "…" : "");
    const poor = row.poor_retrieval === null ? "–" : row.poor_retrieval ? "yes" : "no";
    const tr = el("tr", { "data-id": row.id, tabIndex: 0 },
      el("td", { class: "time", title: new Date(row.time * 1000).toISOString() }, fmtTime(row.time)),
      el("td", { class: "question" }, question),
      ...METRICS.map((m) => scoreCell(row, m)),
      el("td", { class: "verdict-cell" }, el("span", { class: verdictClass(row.verdict), text: row.verdict }),
        row.unsupported_claims ? el("span", { class: "badge", title: "unsupported claims in the answer", text: String(row.unsupported_claims) }) : null),
      el("td", { class: "poor " + (row.poor_retrieval ? "fail" : "") }, poor),
      el("td", { class: "model" }, row.model || "–"),
      el("td", { class: "label" }, labelText(row.label)),
    );
    if (row.id === state.selected) tr.classList.add("selected");
    return tr;
  }

  function rowElement(id) {
    for (const tr of $("rows").children) if (tr.getAttribute("data-id") === id) return tr;
    return null;
  }

  const newer = (a, b) => a.time > b.time || (a.time === b.time && a.id > b.id); // the store's order: (time, id) desc

  function replaceRows(items, nextCursor) {
    state.rows.clear();
    state.order = [];
    const body = el("tbody", { id: "rows" });
    for (const row of items) {
      state.rows.set(row.id, row);
      state.order.push(row.id);
      body.append(rowNode(row));
    }
    $("rows").replaceWith(body);
    state.nextCursor = nextCursor;
    updateFooter();
  }

  function appendRows(items, nextCursor) {
    for (const row of items) {
      if (state.rows.has(row.id)) continue;
      state.rows.set(row.id, row);
      state.order.push(row.id);
      $("rows").append(rowNode(row));
    }
    state.nextCursor = nextCursor;
    updateFooter();
  }

  function mergeLive(items) { // rows from a live poll: new ones in their place by time, changed ones replaced
    let added = 0;
    for (const row of items) {
      const known = state.rows.get(row.id);
      if (known) {
        if (JSON.stringify(known.label) !== JSON.stringify(row.label)) {
          state.rows.set(row.id, row);
          rowElement(row.id)?.replaceWith(rowNode(row));
        }
        continue;
      }
      const oldest = state.order.length ? state.rows.get(state.order[state.order.length - 1]) : null;
      if (oldest && !newer(row, oldest) && state.nextCursor) continue; // older than the table: "older" will page it in
      let index = state.order.findIndex((id) => newer(row, state.rows.get(id)));
      if (index < 0) index = state.order.length;
      const tr = rowNode(row);
      tr.classList.add("new");
      const before = index < state.order.length ? rowElement(state.order[index]) : null;
      $("rows").insertBefore(tr, before);
      state.order.splice(index, 0, row.id);
      state.rows.set(row.id, row);
      added += 1;
    }
    while (state.order.length > MAX_ROWS) { // bounded: drop the oldest, resume paging after the last kept row
      const id = state.order.pop();
      state.rows.delete(id);
      rowElement(id)?.remove();
      state.nextCursor = state.rows.get(state.order[state.order.length - 1]).cursor;
    }
    if (added) updateFooter();
    return added;
  }

  function updateFooter() {
    $("more").hidden = !state.nextCursor;
    $("empty").hidden = state.order.length > 0;
  }

  async function reload() {
    const generation = ++state.generation;
    showError("");
    setStatus("loading…");
    try {
      const page = await api("interactions?" + queryString(state.filters, { limit: state.meta.page_size }));
      if (generation !== state.generation) return;
      replaceRows(page.items, page.next_cursor);
      setStatus(`${state.order.length}${page.next_cursor ? "+" : ""} rows · updated ${fmtTime(Date.now() / 1000).slice(11)}`);
    } catch (error) {
      if (generation !== state.generation) return;
      setStatus("");
      if (!(error instanceof Unauthorized)) showError(error.message);
    }
  }

  async function loadOlder() {
    if (!state.nextCursor) return;
    const generation = state.generation;
    $("more").disabled = true;
    try {
      const page = await api("interactions?" + queryString(state.filters, { limit: state.meta.page_size, cursor: state.nextCursor }));
      if (generation === state.generation) appendRows(page.items, page.next_cursor);
    } catch (error) {
      if (!(error instanceof Unauthorized)) showError(error.message);
    } finally {
      $("more").disabled = false;
    }
  }

  async function poll() {
    if (state.polling || !$("live").checked || document.hidden || !state.meta) return;
    state.polling = true;
    const generation = state.generation;
    try {
      const newest = state.order.length ? state.rows.get(state.order[0]).time : null;
      const filters = { ...state.filters };
      if (newest !== null) { // ask again a little before the newest row: rows are stored when scoring ends
        const from = Math.floor((newest - state.meta.live_lookback_s) * 1000);
        filters.from = String(Math.max(from, Number(state.filters.from || 0)));
      }
      const page = await api("interactions?" + queryString(filters, { limit: LIVE_LIMIT }));
      if (generation !== state.generation) return;
      if (newest === null && page.next_cursor) state.nextCursor = page.next_cursor;
      const added = mergeLive(page.items);
      setStatus(`${state.order.length}${state.nextCursor ? "+" : ""} rows · live${added ? ` · ${added} new` : ""} · ${fmtTime(Date.now() / 1000).slice(11)}`);
      showError("");
    } catch (error) {
      if (!(error instanceof Unauthorized)) setStatus("live: " + error.message);
    } finally {
      state.polling = false;
    }
  }

  // ------------------------------------------------------------------------------------------------- detail
  // The text with the claims' spans marked.  Offsets are Python string indices (code points), so the text is cut
  // by code points (Array.from), not by JavaScript's UTF-16 units.
  function highlighted(text, claims) {
    const points = Array.from(text);
    const box = el("div", { class: "text" });
    let position = 0;
    const sorted = claims.filter((c) => c.supported !== null).sort((a, b) => a.start - b.start);
    for (const claim of sorted) {
      if (claim.start < position || claim.end > points.length || claim.end <= claim.start) continue; // overlapping or stale
      box.append(points.slice(position, claim.start).join(""));
      const piece = points.slice(claim.start, claim.end).join("");
      if (claim.outcome === "contradicted") {
        box.append(el("mark", { class: "contradicted", title: claimWhy(claim) }, piece));
      } else if (claim.supported === false) {
        box.append(el("mark", { class: "unsupported", title: claimWhy(claim) }, piece));
      } else {
        box.append(el("span", { class: "supported", title: claimWhy(claim) }, piece));
      }
      position = claim.end;
    }
    box.append(points.slice(position).join(""));
    return box;
  }

  function claimWhy(claim) {
    const parts = [claim.outcome === "contradicted" ? "contradicted by the documents" : (claim.supported ? "supported: " : "unsupported: ") + claim.reason];
    if (claim.conflicts && claim.conflicts.length) parts.push("the documents say otherwise: " + claim.conflicts.join("; "));
    if (typeof claim.similarity === "number") parts.push("best passage cosine " + claim.similarity.toFixed(2));
    if (claim.document !== null && claim.document !== undefined) parts.push("best document #" + (claim.document + 1));
    if (claim.missing_numbers.length) parts.push("numbers not in the documents: " + claim.missing_numbers.join(", "));
    if (claim.missing_names.length) parts.push("names not in the documents: " + claim.missing_names.join(", "));
    return parts.join(" · ");
  }

  function fact(term, ...value) {
    return [el("dt", { text: term }), el("dd", null, ...value)];
  }

  function scoresTable(item) {
    const rows = METRICS.map((m) => {
      const value = item.scores[m];
      const has = typeof value === "number";
      const passed = item.passed[m];
      return el("tr", { "data-metric": m },
        el("th", { text: m.toUpperCase() }),
        el("td", { class: "num " + (has ? (passed ? "pass" : "fail") : "na") }, fmtScore(value)),
        el("td", { class: "num" }, (passed === false ? "< " : "≥ ") + item.thresholds[m].toFixed(2)),
        el("td", { text: has ? (passed ? "pass" : "fail") : "no score" }),
        el("td", { class: "muted", text: MEANING[m] }));
    });
    return el("table", { class: "scores" },
      el("thead", null, el("tr", null, el("th", { text: "metric" }), el("th", { text: "score" }), el("th", { text: "threshold" }),
        el("th", { text: "result" }), el("th", { text: "a low value means" }))),
      el("tbody", null, ...rows));
  }

  function documentsList(item) {
    if (!item.documents.length) return el("p", { class: "muted", text: "no documents" });
    return el("div", null, ...item.documents.map((doc) => el("div", { class: "doc" + (doc.attributed ? " attributed" : ""), "data-index": doc.index },
      el("div", { class: "doc-head" }, `#${doc.index + 1}`, doc.id ? ` · ${doc.id}` : "",
        doc.attributed ? el("span", { class: "badge attributed-badge", title: "the document that best matches the supporting content", text: " attributed " }) : null),
      el("div", { class: "text" }, doc.text))));
  }

  function labelForm(item) {
    const form = el("form", { id: "label-form" });
    const current = item.label
      ? el("p", { class: "current-label" }, "current label: ", labelText(item.label), item.label.note ? ` — “${item.label.note}”` : "",
        ` (${fmtTime(item.label.time)})`)
      : el("p", { class: "current-label muted", text: "not labelled yet" });
    const right = el("input", { type: "radio", name: "verdict_right", value: "true", id: "l-right" });
    const wrong = el("input", { type: "radio", name: "verdict_right", value: "false", id: "l-wrong" });
    const choice = el("select", { id: "l-verdict", name: "right_verdict", disabled: true },
      el("option", { value: "", text: "the right verdict is … (unknown)" }),
      ...VERDICTS.filter((v) => v !== item.verdict).map((v) => el("option", { value: v, text: v })));
    const note = el("textarea", { id: "l-note", name: "note", rows: 2 });
    note.placeholder = "note (optional)";
    note.maxLength = 2000;
    const result = el("span", { id: "l-result" });
    right.addEventListener("change", () => { choice.disabled = true; });
    wrong.addEventListener("change", () => { choice.disabled = false; });
    form.append(current,
      el("label", { htmlFor: "l-right" }, right, ` verdict right (${item.verdict})`),
      el("label", { htmlFor: "l-wrong" }, wrong, " verdict wrong"), choice, note,
      el("button", { type: "submit", id: "l-submit", text: "save label" }), result);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      result.className = "";
      if (!right.checked && !wrong.checked) {
        result.className = "error";
        result.textContent = "choose right or wrong";
        return;
      }
      const body = { verdict_right: right.checked, right_verdict: wrong.checked && choice.value ? choice.value : null, note: note.value };
      try {
        await api(`interactions/${encodeURIComponent(item.id)}/labels`, {
          method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
        });
        result.className = "saved";
        result.textContent = "saved";
        await openDetail(item.id, { keepScroll: true, message: "saved" });
      } catch (error) {
        result.className = "error";
        result.textContent = error.message;
      }
    });
    return form;
  }

  function renderDetail(item) {
    const trace = item.trace || {};
    const traceUrl = trace.url ? safeHttpUrl(trace.url) : null;
    let traceValue = el("span", { class: "muted", text: "no trace id" });
    if (traceUrl) {
      const link = el("a", { id: "trace-link", text: trace.trace_id });
      link.href = traceUrl; // an http(s) URL built by the server from the configured template and a hex id
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      traceValue = link;
    } else if (trace.trace_id) {
      traceValue = el("span", { text: trace.trace_id + " (set [triage] trace_url for a link)" });
    }
    const tokens = item.tokens || {};
    const tok = (v) => (v === null || v === undefined ? "–" : String(v));
    const answerClaims = item.claims.filter((c) => c.of === "answer");
    const supportClaims = item.claims.filter((c) => c.of === "supporting");
    const unsupported = answerClaims.filter((c) => c.supported === false);
    const contradicted = unsupported.filter((c) => c.outcome === "contradicted").length;
    const guard = item.guard || null;

    const body = el("div", { id: "d-body" },
      el("p", null, el("span", { class: verdictClass(item.verdict), id: "d-verdict", text: item.verdict }),
        item.poor_retrieval ? el("span", { class: "badge", text: " poor retrieval " }) : null),
      el("div", { class: "rule", id: "d-rule" }, el("strong", { text: "why: " }), item.explanation || "(no explanation recorded)"),
      el("h3", { text: "scores against the thresholds in force" }), scoresTable(item),
      el("h3", { text: "question" }), el("div", { class: "text", id: "d-question" }, item.question),
      el("h3", { text: `${guard && guard.delivered_answer !== null ? "answer as the model wrote it" : "answer"}${unsupported.length ? ` — ${unsupported.length} unsupported claim${unsupported.length > 1 ? "s" : ""} marked` : ""}${contradicted ? ` (${contradicted} contradicted)` : ""}` }),
      item.answer === null ? el("p", { class: "muted", text: "no answer recorded" }) : highlighted(item.answer, answerClaims),
      unsupported.length ? el("ul", { class: "claims", id: "d-unsupported" },
        ...unsupported.map((c) => el("li", { class: c.outcome === "contradicted" ? "bad contradicted" : "bad" }, c.text,
          el("span", { class: "muted", text: " — " + claimWhy(c) })))) : null,
      guard ? el("h3", { text: `guard: ${guard.action}, ${guard.outcome}${guard.delivered_answer === null ? " (the app received the answer above)" : " — the answer the app received"}` }) : null,
      guard && guard.delivered_answer !== null ? el("div", { class: "text", id: "d-delivered" }, guard.delivered_answer) : null,
      el("h3", { text: "supporting content (what the model says its answer rests on)" }),
      item.supporting === null ? el("p", { class: "muted", text: "none (not injected, or not recovered)" }) : highlighted(item.supporting, supportClaims),
      el("h3", { text: `retrieved documents (${item.documents.length})` }), documentsList(item),
      el("h3", { text: "request" }),
      el("dl", { class: "facts" },
        ...fact("id", item.id),
        ...fact("time", fmtTime(item.time), el("span", { class: "muted", text: " " + new Date(item.time * 1000).toISOString() })),
        ...fact("model", item.model || "–"),
        ...fact("user", item.user || "–"),
        ...fact("session", item.session || "–"),
        ...fact("recognised by", item.rag_source || "–"),
        ...fact("latency", item.latency_ms === null ? "–" : `${item.latency_ms.toFixed(0)} ms`),
        ...fact("tokens", `prompt ${tok(tokens.prompt)} · answer ${tok(tokens.answer)} · supporting content ${tok(tokens.supporting)}`),
        ...fact("trace", traceValue),
        ...(item.unscored_reason ? fact("unscored because", item.unscored_reason) : [])),
      el("h3", { text: "your label" }), labelForm(item));
    $("d-body").replaceWith(body);
    $("d-title").textContent = `${fmtTime(item.time)} · ${item.model || "unknown model"}`;
  }

  async function openDetail(id, options = {}) {
    state.selected = id;
    writeUrl();
    for (const tr of $("rows").children) tr.classList.toggle("selected", tr.getAttribute("data-id") === id);
    const panel = $("detail");
    const scroll = panel.scrollTop;
    panel.hidden = false;
    document.body.classList.add("detail-open");
    try {
      const item = await api("interactions/" + encodeURIComponent(id));
      if (state.selected !== id) return;
      renderDetail(item);
      if (options.keepScroll) panel.scrollTop = scroll;
      if (options.message) $("l-result").textContent = options.message;
      if (options.message) $("l-result").className = "saved";
      const row = state.rows.get(id);
      if (row && JSON.stringify(row.label) !== JSON.stringify(item.label)) {
        const updated = { ...row, label: item.label };
        state.rows.set(id, updated);
        rowElement(id)?.replaceWith(rowNode(updated));
      }
    } catch (error) {
      if (error instanceof Unauthorized) return;
      $("d-body").replaceWith(el("div", { id: "d-body" }, el("p", { class: "error", text: error.message })));
    }
  }

  function closeDetail() {
    state.selected = null;
    $("detail").hidden = true;
    document.body.classList.remove("detail-open");
    for (const tr of $("rows").children) tr.classList.remove("selected");
    writeUrl();
  }

  // --------------------------------------------------------------------------------------------------- start
  function renderMeta(meta) {
    const box = $("verdicts");
    for (const old of box.querySelectorAll("label")) old.remove();
    for (const verdict of meta.verdicts) {
      box.append(el("label", null, el("input", { type: "checkbox", value: verdict, name: "verdict" }), el("span", { class: verdictClass(verdict), text: verdict })));
    }
    $("thresholds").textContent = "thresholds in force: " + meta.metrics.map((m) => `${m.toUpperCase()} ${meta.thresholds[m].toFixed(2)}`).join(" · ");
  }

  async function start() {
    window.localStorage.removeItem("ragtap.triage.token"); // where earlier versions kept it: gone, not reused
    $("forget-token").hidden = !state.token;
    try {
      state.meta = await api("meta");
    } catch (error) {
      if (!(error instanceof Unauthorized)) showError(error.message);
      return;
    }
    $("auth").hidden = true;
    renderMeta(state.meta);
    const { filters, id } = filtersFromUrl();
    state.filters = filters;
    filtersToForm(filters);
    await reload();
    if (id) openDetail(id);
    if (state.timer === null && state.meta.poll_seconds > 0) {
      state.timer = window.setInterval(poll, state.meta.poll_seconds * 1000);
    }
    if (state.meta.poll_seconds <= 0) $("live").checked = false;
  }

  $("filters").addEventListener("submit", (event) => {
    event.preventDefault();
    state.filters = filtersFromForm();
    writeUrl();
    reload();
  });
  $("clear").addEventListener("click", () => {
    state.filters = {};
    filtersToForm(state.filters);
    writeUrl();
    reload();
  });
  $("more").addEventListener("click", loadOlder);
  $("close").addEventListener("click", closeDetail);
  $("live").addEventListener("change", () => { if ($("live").checked) poll(); });
  document.addEventListener("keydown", (event) => { if (event.key === "Escape" && !$("detail").hidden) closeDetail(); });
  $("rows").parentElement.addEventListener("click", (event) => {
    const tr = event.target.closest("tbody tr");
    if (tr) openDetail(tr.getAttribute("data-id"));
  });
  $("rows").parentElement.addEventListener("keydown", (event) => {
    const tr = event.target.closest("tbody tr");
    if (tr && event.key === "Enter") openDetail(tr.getAttribute("data-id"));
  });
  $("auth").addEventListener("submit", (event) => {
    event.preventDefault();
    state.token = $("token").value;
    $("token").value = "";
    start();
  });
  $("forget-token").addEventListener("click", () => {
    state.token = null;
    window.location.reload();
  });
  start();
})();
