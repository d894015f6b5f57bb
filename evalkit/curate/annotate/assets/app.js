// evalkit annotate: the page. Every text from the set is shown with textContent (never innerHTML).
// Offsets: the server counts code points (Python str indices); JavaScript strings count UTF-16 units.
// The conversions below are the only place the two meet.
"use strict";
(() => {
  const token = document.querySelector('meta[name="evalkit-token"]').content;
  const $ = (id) => document.getElementById(id);
  const docs = new Map();
  let state = null;
  let current = null;
  let docId = null;
  let docText = "";
  let hit = null;

  const isHigh = (c) => c >= 0xd800 && c <= 0xdbff;
  const isLow = (c) => c >= 0xdc00 && c <= 0xdfff;

  // UTF-16 offset -> code point offset (a surrogate pair is one code point, as in Python).
  function toCp(text, u16) {
    let cp = 0;
    for (let u = 0; u < u16; u++) {
      if (!(isLow(text.charCodeAt(u)) && u > 0 && isHigh(text.charCodeAt(u - 1)))) cp++;
    }
    return cp;
  }
  // Code point offset -> UTF-16 offset.
  function toU16(text, cp) {
    let u = 0;
    for (let c = 0; c < cp && u < text.length; c++) {
      u += isHigh(text.charCodeAt(u)) && u + 1 < text.length && isLow(text.charCodeAt(u + 1)) ? 2 : 1;
    }
    return u;
  }

  async function api(path, body) {
    const headers = { "X-Evalkit-Token": token };
    const init = { headers };
    if (body !== undefined) {
      init.method = "POST";
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    const data = await response.json();
    if (!response.ok) throw new Error(data.error || response.statusText);
    return data;
  }

  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }

  function say(text, error) {
    $("status").textContent = text;
    $("status").className = error ? "error" : "";
  }

  // ----- the queue -----------------------------------------------------------------------------------------
  function renderQueue() {
    const list = $("qlist");
    list.replaceChildren();
    state.questions.forEach((q, i) => {
      const li = el("li", null, q.status + (q.failure ? " failure" : "") + (current && q.id === current.id ? " current" : ""));
      li.dataset.id = q.id;
      li.append(el("span", q.status === "todo" ? String(i + 1) : q.status, "badge"), el("span", q.question, "q"));
      li.addEventListener("click", () => openQuestion(q.id));
      list.append(li);
    });
    $("set").textContent = state.set;
    $("progress").textContent = `${state.done} / ${state.questions.length} labelled · ${state.skipped} skipped`;
    const mine = list.querySelector("li.current");
    if (mine) mine.scrollIntoView({ block: "nearest" });
  }

  async function refreshState() {
    state = await api("/api/state");
    renderQueue();
  }

  function neighbour(step, todoOnly) {
    const ids = state.questions.map((q) => q.id);
    let i = current ? ids.indexOf(current.id) : -1;
    for (let n = 0; n < ids.length; n++) {
      i = (i + step + ids.length) % ids.length;
      if (!todoOnly || state.questions[i].status === "todo") return ids[i];
    }
    return null;
  }

  // ----- one question --------------------------------------------------------------------------------------
  function spanLine(span, removable) {
    const li = el("li");
    const link = el("a", `${span.doc_id} [${span.start}:${span.end}] `);
    link.href = "#";
    link.addEventListener("click", (e) => { e.preventDefault(); showSpan(span); });
    li.append(link, el("q", span.text));
    if (removable) {
      const button = el("button", "remove");
      button.type = "button";
      button.addEventListener("click", () => edit("remove_span", { doc_id: span.doc_id, start: span.start, end: span.end }));
      li.append(" ", button);
    }
    return li;
  }

  function renderQuestion() {
    const q = current;
    $("qtext").textContent = q.question;
    const tags = Object.entries(q.tags).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`);
    $("qtags").textContent = `${q.id} · ${tags.join(" · ")}`;
    $("variants").textContent = q.variants.length ? `also asked as: ${q.variants.join(" | ")}` : "";
    const warnings = $("warnings");
    warnings.replaceChildren();
    if (q.trivial) warnings.append(el("div", "Trivial: the only span lies inside one sentence. Consider a question that needs more, or skip it.", "warn"));
    for (const d of q.duplicates) warnings.append(el("div", `Possible duplicate of ${d.id} (similarity ${d.similarity}): ${d.question}`, "warn"));
    const entry = q.entry;
    const spans = $("spans");
    spans.replaceChildren();
    if (entry.status === "unanswerable") spans.append(el("li", "Not in the documents (unanswerable)."));
    entry.evidence.forEach((s) => spans.append(spanLine(s, true)));
    if (entry.status === "skipped") spans.append(el("li", "Skipped."));
    $("modeinfo").textContent = entry.evidence.length ? `evidence_mode ${entry.evidence_mode}` : "";
    const proposed = $("proposed");
    proposed.replaceChildren();
    if (q.proposed.length) {
      proposed.append(el("p", "Proposed (not saved until accepted):", "muted"));
      const ul = el("ul");
      q.proposed.forEach((s) => ul.append(spanLine(s, false)));
      proposed.append(ul);
    }
    const earlier = $("earlier");
    earlier.replaceChildren();
    if (q.earlier && entry.status === "untouched") earlier.append(el("p", `Labelled before: ${q.earlier.evidence_mode}, ${q.earlier.evidence.length} span(s); an edit replaces that label.`, "muted"));
    $("mode").value = entry.mode || "";
    $("answers").value = entry.answers.join("; ");
    $("notes").value = entry.notes;
    const clist = $("clist");
    clist.replaceChildren();
    for (const c of q.candidates) {
      const li = el("li");
      li.append(el("span", `${c.source}${c.source === "bm25" ? " " + c.score : ""} · ${c.doc_id}`, "src"), el("span", c.text, "text"));
      li.addEventListener("click", () => showSpan(c));
      clist.append(li);
    }
    paintHighlights();
  }

  async function openQuestion(id) {
    if (!id) return;
    current = await api(`/api/question?id=${encodeURIComponent(id)}`);
    renderQueue();
    renderQuestion();
    const first = current.entry.evidence[0] || current.proposed[0] || current.candidates[0];
    if (first) await showSpan(first);
    say("");
  }

  async function edit(op, args) {
    if (!current) return;
    try {
      current = await api("/api/edit", Object.assign({ id: current.id, op }, args || {}));
      await refreshState();
      renderQuestion();
      say(`saved (${op.replace("_", " ")})`);
      return true;
    } catch (error) {
      say(error.message, true);
      return false;
    }
  }

  // ----- the document --------------------------------------------------------------------------------------
  async function openDoc(id) {
    if (id === docId) return;
    if (!docs.has(id)) docs.set(id, await api(`/api/doc?id=${encodeURIComponent(id)}`));
    const doc = docs.get(id);
    docId = id;
    docText = doc.text;
    hit = null;
    $("doctitle").textContent = `${doc.title} (${doc.doc_id})`;
    $("doc").textContent = docText;  // one text node: fast for long documents, and offsets stay simple
    $("docsel").value = id;
    paintHighlights();
  }

  function rangeAt(u16start, u16end) {
    const node = $("doc").firstChild;
    const range = document.createRange();
    if (!node) return range;
    range.setStart(node, Math.min(u16start, node.length));
    range.setEnd(node, Math.min(u16end, node.length));
    return range;
  }

  function paintHighlights() {
    if (!(window.CSS && CSS.highlights && window.Highlight)) return;
    CSS.highlights.delete("saved");
    if (!current || !docText) return;
    const ranges = current.entry.evidence
      .filter((s) => s.doc_id === docId)
      .map((s) => rangeAt(toU16(docText, s.start), toU16(docText, s.end)));
    if (ranges.length) CSS.highlights.set("saved", new Highlight(...ranges));
  }

  function scrollToRange(range) {
    const pre = $("doc");
    const box = range.getBoundingClientRect();
    pre.scrollTop += box.top - pre.getBoundingClientRect().top - pre.clientHeight / 3;
  }

  async function showSpan(span) {
    await openDoc(span.doc_id);
    const range = rangeAt(toU16(docText, span.start), toU16(docText, span.end));
    if (window.CSS && CSS.highlights && window.Highlight) CSS.highlights.set("focus", new Highlight(range));
    scrollToRange(range);
  }

  // The selection inside the document as UTF-16 offsets, widened so it never splits a surrogate pair.
  function selectedOffsets() {
    const selection = window.getSelection();
    if (!selection || selection.rangeCount === 0 || selection.isCollapsed) return null;
    const range = selection.getRangeAt(0);
    const pre = $("doc");
    if (!pre.contains(range.startContainer) || !pre.contains(range.endContainer)) return null;
    const before = document.createRange();
    before.setStart(pre, 0);
    before.setEnd(range.startContainer, range.startOffset);
    let start = before.toString().length;
    let end = start + range.toString().length;
    if (start > 0 && isLow(docText.charCodeAt(start)) && isHigh(docText.charCodeAt(start - 1))) start--;
    if (end < docText.length && isLow(docText.charCodeAt(end)) && isHigh(docText.charCodeAt(end - 1))) end++;
    return end > start ? { start, end } : null;
  }

  async function saveSelection() {
    const picked = selectedOffsets();
    if (!picked) return say("select the answer in the document first (or find it: f, type, Enter)", true);
    const text = docText.slice(picked.start, picked.end);
    const ok = await edit("add_span", { doc_id: docId, start: toCp(docText, picked.start), end: toCp(docText, picked.end), text });
    if (ok) window.getSelection().removeAllRanges();
  }

  // ----- finding -------------------------------------------------------------------------------------------
  function findNext() {
    const needle = $("find").value;
    if (!needle || !docText) return;
    const lowered = docText.toLowerCase();
    const [hay, want] = lowered.length === docText.length ? [lowered, needle.toLowerCase()] : [docText, needle];
    let at = hay.indexOf(want, hit ? hit.end : 0);
    if (at < 0) at = hay.indexOf(want);
    if (at < 0) {
      $("findinfo").textContent = "not in this document";
      return;
    }
    hit = { start: at, end: at + want.length };
    const range = rangeAt(hit.start, hit.end);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);  // selected: s saves it (the keyboard path)
    scrollToRange(range);
    $("findinfo").textContent = `match at ${toCp(docText, at)}`;
  }

  async function findAll() {
    const result = await api(`/api/find?q=${encodeURIComponent($("find").value)}`);
    const list = $("findhits");
    list.replaceChildren();
    for (const h of result.hits) {
      const li = el("li", `${h.doc_id}: …${h.snippet}…`);
      li.addEventListener("click", () => showSpan(h));
      list.append(li);
    }
    $("findinfo").textContent = `${result.hits.length}${result.truncated ? "+" : ""} match(es) in all documents`;
  }

  // ----- wiring --------------------------------------------------------------------------------------------
  async function advance() {
    const next = neighbour(1, true);
    if (next) await openQuestion(next);
  }

  const actions = {
    s: saveSelection,
    a: () => edit("accept_proposed"),
    n: async () => { if (await edit("unanswerable")) await advance(); },
    k: async () => { if (await edit("skip")) await advance(); },
    u: () => edit("undo"),
    j: () => openQuestion(neighbour(1, false)),
    p: () => openQuestion(neighbour(-1, false)),
    f: () => $("find").focus(),
  };

  function wire() {
    $("save").addEventListener("click", saveSelection);
    $("accept").addEventListener("click", actions.a);
    $("none").addEventListener("click", actions.n);
    $("skip").addEventListener("click", actions.k);
    $("undo").addEventListener("click", actions.u);
    $("next").addEventListener("click", actions.j);
    $("prev").addEventListener("click", actions.p);
    $("mode").addEventListener("change", () => edit("mode", { mode: $("mode").value }));
    $("answers").addEventListener("change", () => edit("answers", { answers: $("answers").value.split(";") }));
    $("notes").addEventListener("change", () => edit("notes", { notes: $("notes").value }));
    $("docsel").addEventListener("change", () => openDoc($("docsel").value));
    $("findall").addEventListener("click", findAll);
    $("find").addEventListener("keydown", (e) => {
      if (e.key === "Enter") { e.preventDefault(); findNext(); }
      if (e.key === "Escape") { $("find").blur(); }
    });
    document.addEventListener("keydown", (e) => {
      const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
      if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
      const action = actions[e.key];
      if (action) { e.preventDefault(); action(); }
    });
  }

  async function start() {
    wire();
    await refreshState();
    const select = $("docsel");
    for (const d of state.documents) {
      const option = el("option", `${d.title} (${d.n_chars.toLocaleString()} chars)`);
      option.value = d.doc_id;
      select.append(option);
    }
    if (state.documents.length) await openDoc(state.documents[0].doc_id);
    if (state.resume) await openQuestion(state.resume);
    document.body.dataset.ready = "true";
  }

  start().catch((error) => say(error.message, true));
})();
