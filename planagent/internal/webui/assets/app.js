// planagent's web view: reads /api/runs, follows one run over server-sent
// events (/api/runs/RUN/stream) and redraws it. Every text from a run goes
// through textContent, never innerHTML: task titles and reports are the
// model's words.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const STATUSES = ["pending", "in_progress", "interrupted", "completed", "failed", "skipped"];
const SPAN_CLASS = { running: "in_progress", completed: "completed", failed: "failed", interrupted: "interrupted" };
const MAX_EVENTS = 500;

let current = null; // the run id shown
let source = null; // its EventSource
let lastRun = null;
let shownTask = null; // the task whose detail is open
// The session's token, from the URL planagent printed: without it the page
// only reads (writes send it in a header; the server also checks Origin).
const TOKEN = new URLSearchParams(location.search).get("token") || "";

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}

function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}

function fmtMS(ms) {
  if (ms < 1000) return ms + "ms";
  const s = ms / 1000;
  if (s < 60) return s.toFixed(1) + "s";
  const m = Math.floor(s / 60);
  return m + "m" + Math.round(s - 60 * m) + "s";
}

// statusText is a task status as people read it: the legend's words.
function statusText(s) {
  return String(s).replace("_", " ");
}

// taskTime is a task's time for the table: its elapsed time once an
// attempt ended, and the time since it started while it runs.
function taskTime(t) {
  if (t.status === "in_progress" && t.started) return "running " + fmtMS(Math.max(0, Date.now() - Date.parse(t.started)));
  return fmtMS(t.elapsed_ms);
}

// connText says whether the page follows a live run: an ended run's page
// is its final picture, whatever the stream does.
function connText(open) {
  if (lastRun && lastRun.status !== "running") return "run " + lastRun.status + " (ended)";
  return open ? "live" : "reconnecting…";
}

// fitText shortens label (keeping suffix whole) until the text element
// fits width pixels: the status after a title must stay inside its box.
function fitText(node, label, suffix, width) {
  node.textContent = label + suffix;
  for (let n = label.length - 1; n > 0 && node.getComputedTextLength() > width; n--) {
    node.textContent = label.slice(0, n) + "…" + suffix;
  }
}

function fmtUSD(c) {
  return c === undefined || c === null ? "-" : "$" + c.toFixed(4);
}

function fmtTime(t) {
  return t ? new Date(t).toLocaleTimeString() : "";
}

function setConn(text) {
  document.getElementById("conn").textContent = text;
}

async function getJSON(url) {
  const r = await fetch(url, { cache: "no-store" });
  if (!r.ok) throw new Error(url + ": " + r.status + " " + (await r.text()));
  return r.json();
}

async function loadRuns() {
  const rows = await getJSON("/api/runs");
  const ul = document.getElementById("runs");
  ul.replaceChildren();
  for (const r of rows) {
    const a = el("a", { href: "#" + r.id, class: "st-" + runClass(r.status) + (r.id === current ? " current" : "") },
      r.id, el("small", {}, (r.status || "unreadable") + " · " + (r.goal || r.error || "")));
    ul.append(el("li", {}, a));
  }
  return rows;
}

function runClass(status) {
  switch (status) {
    case "completed": return "completed";
    case "failed": case "aborted": return "failed";
    case "running": return "in_progress";
    case "interrupted": return "interrupted";
    default: return "pending";
  }
}

function select(id) {
  if (id === current && source) return;
  current = id;
  lastRun = null;
  if (source) source.close();
  document.getElementById("events").replaceChildren();
  document.getElementById("detail").hidden = true;
  for (const a of document.querySelectorAll("#runs a")) a.classList.toggle("current", a.getAttribute("href") === "#" + id);
  // The first picture comes from a plain request, the live updates from the stream.
  getJSON("/api/runs/" + encodeURIComponent(id)).then(render).catch((e) => setConn(String(e)));
  source = new EventSource("/api/runs/" + encodeURIComponent(id) + "/stream");
  source.addEventListener("open", () => setConn(connText(true)));
  source.addEventListener("error", () => setConn(connText(false)));
  source.addEventListener("run", (m) => render(JSON.parse(m.data)));
  source.addEventListener("task_event", (m) => addEvent(JSON.parse(m.data)));
  source.addEventListener("problem", (m) => setConn("problem: " + JSON.parse(m.data).error));
}

function render(run) {
  if (run.id !== current) return;
  if (lastRun && lastRun.status !== run.status) loadRuns().catch(() => {});
  lastRun = run;
  if (run.status !== "running") setConn(connText(false));
  document.getElementById("run-title").textContent = run.id + ": " + run.status;
  document.getElementById("run-goal").textContent = "Goal: " + run.goal + (run.paused ? " · paused: " + run.paused : "");
  const c = run.counts;
  document.getElementById("run-totals").textContent =
    `${run.tasks.length} tasks: ${c.completed} completed, ${c.in_progress} running, ${c.interrupted ? c.interrupted + " interrupted, " : ""}${c.pending} pending, ${c.failed} failed, ${c.skipped} skipped · ` +
    `tokens ${run.tokens.total} · cost ${fmtUSD(run.cost_usd)} · agent time ${fmtMS(run.agent_ms)} · wall ${fmtMS(run.wall_ms)}` +
    (run.budget ? ` · budget: ${budgetText(run.budget)}` : "");
  drawGraph(run);
  drawTable(run);
  drawTimeline(run);
}

// drawGraph lays the tasks out in columns by level (longest path from a
// root) and draws each dependency as a curve.
function budgetText(b) {
  const parts = [];
  if (b.tokens) parts.push(b.tokens + " tokens");
  if (b.time_ms) parts.push(fmtMS(b.time_ms));
  // Every digit of the budget: $0.015 is not $0.01 (as config.FormatUSD).
  if (b.usd) parts.push("$" + (String(b.usd).length < b.usd.toFixed(2).length ? b.usd.toFixed(2) : String(b.usd)));
  if (b.task_tokens) parts.push(b.task_tokens + " tokens per task");
  return parts.join(", ");
}

function drawGraph(run) {
  const W = 190, H = 48, GX = 60, GY = 18;
  const rows = {};
  const pos = {};
  for (const t of run.tasks) {
    const r = rows[t.level] || 0;
    rows[t.level] = r + 1;
    pos[t.id] = { x: 10 + t.level * (W + GX), y: 10 + r * (H + GY) };
  }
  const width = 20 + (Math.max(0, ...Object.keys(rows).map(Number)) + 1) * (W + GX);
  const height = 20 + Math.max(1, ...Object.values(rows)) * (H + GY);
  const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "task graph" });
  root.append(svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" },
    svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#78909c" }))));
  for (const t of run.tasks) {
    for (const d of t.dependencies) {
      if (!pos[d]) continue;
      const a = pos[d], b = pos[t.id];
      const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2, mx = (x1 + x2) / 2;
      root.append(svg("path", { class: "edge", d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`, "marker-end": "url(#arrow)" }));
    }
  }
  const labels = [];
  for (const t of run.tasks) {
    const p = pos[t.id];
    const id = svg("text", { class: "id", x: 8, y: 18 });
    const label = svg("text", { class: "label", x: 8, y: 36 });
    const g = svg("g", { class: "node st-" + t.status, "data-task": t.id, "data-status": t.status, transform: `translate(${p.x},${p.y})` },
      svg("title", {}, `${t.id}: ${t.title} (${statusText(t.status)})`),
      svg("rect", { width: W, height: H, rx: 6 }), id, label);
    labels.push([id, t.id, ""], [label, t.title, " · " + statusText(t.status)]);
    g.addEventListener("click", () => showTask(t.id));
    root.append(g);
  }
  document.getElementById("graph").replaceChildren(root);
  // Measured once drawn: the text's width depends on the font.
  for (const [node, text, suffix] of labels) fitText(node, text, suffix, W - 16);
}

function drawTable(run) {
  const body = document.querySelector("#tasks tbody");
  body.replaceChildren();
  for (const t of run.tasks) {
    const tr = el("tr", { "data-task": t.id, "data-status": t.status },
      el("td", {}, t.id), el("td", {}, t.title), el("td", { class: "status st-" + t.status }, statusText(t.status)),
      el("td", {}, String(t.attempts)), el("td", {}, `${t.tokens.prompt}/${t.tokens.completion}`),
      el("td", {}, fmtUSD(t.cost_usd)), el("td", { class: "time" }, taskTime(t)), el("td", {}, fmtTime(t.started)));
    tr.addEventListener("click", () => showTask(t.id));
    body.append(tr);
  }
}

function drawTimeline(run) {
  const box = document.getElementById("timeline");
  const start = Date.parse(run.created);
  const running = run.tasks.some((t) => t.status === "in_progress");
  const end = Math.max(running ? Date.now() : Date.parse(run.updated), start + 1);
  const rows = [];
  for (const t of run.tasks) {
    if (!t.timeline.length) continue;
    const track = el("div", { class: "track" });
    for (const s of t.timeline) {
      const a = Date.parse(s.start), b = s.end ? Date.parse(s.end) : end;
      const bar = el("div", { class: "bar st-" + (SPAN_CLASS[s.status] || "pending"), "data-status": s.status,
        title: `${t.id} attempt ${s.attempt}: ${s.status}, ${fmtMS(b - a)}` });
      bar.style.left = (100 * (a - start) / (end - start)).toFixed(2) + "%";
      bar.style.width = (100 * (b - a) / (end - start)).toFixed(2) + "%";
      track.append(bar);
    }
    rows.push(el("div", { class: "row" }, el("span", { class: "label" }, t.id), track));
  }
  if (rows.length) rows.push(el("div", { class: "row axis" }, el("span", { class: "label" }, ""),
    el("span", { class: "track" }, el("span", { class: "from" }, "0s"), el("span", { class: "to" }, fmtMS(end - start)))));
  box.replaceChildren(...(rows.length ? rows : [el("p", {}, "No task has started.")]));
}

function addEvent(ev) {
  const ol = document.getElementById("events");
  ol.append(el("li", { "data-task": ev.task }, `${fmtTime(ev.time)} [${ev.task}] ${ev.line}`));
  while (ol.children.length > MAX_EVENTS) ol.firstChild.remove();
  ol.scrollTop = ol.scrollHeight;
}

async function showTask(id) {
  const d = await getJSON(`/api/runs/${encodeURIComponent(current)}/tasks/${encodeURIComponent(id)}`);
  document.getElementById("detail").hidden = false;
  document.getElementById("detail-title").textContent = "Task " + id + (d.commit ? " · commit " + d.commit.slice(0, 12) : "");
  document.getElementById("detail-files").textContent = "Files changed: " + ((d.files_changed || []).join(", ") || "none reported");
  document.getElementById("detail-summary").textContent = d.summary || "";
  document.getElementById("detail-subagents").textContent = (d.subagents || []).map((s) =>
    `${s.id} (attempt ${s.attempt}): ${s.goal} · tokens ${s.tokens.prompt}/${s.tokens.completion} · cost ${fmtUSD(s.cost_usd)}`).join("\n") ||
    "(no sub-agents)";
  drawAttempts(document.getElementById("detail-attempts"), d.attempts || []);
  document.getElementById("detail-acceptance").textContent = d.acceptance || "(no acceptance commands ran for it)";
  document.getElementById("detail-report").textContent = d.report || "(no report yet)";
  shownTask = id;
  drawDiff(document.getElementById("detail-diff"), d.diff || "", d.diff_note || "", d.commit && TOKEN);
  await drawReview();
  document.getElementById("detail").scrollIntoView();
}

// drawAttempts shows a task's attempts side by side, each with its
// verdict: how it ended, its rank among the passing ones (1: merged), how
// its acceptance commands ended (their output one click away), where an
// attempt not merged is kept, whether it was told the previous failure,
// tokens, cost, time and why it failed.
function drawAttempts(box, attempts) {
  if (!attempts.length) { box.replaceChildren("(no attempt yet)"); return; }
  box.replaceChildren(...attempts.map((a) => {
    const verdict = a.rank === 1 ? "merged (rank 1)" : a.rank ? `passed, rank ${a.rank}` : statusText(a.status);
    const accepted = acceptanceVerdict(a.acceptance || "");
    return el("div", { class: `attempt st-${a.status}${a.rank === 1 ? " winner" : ""}`, "data-attempt": a.attempt, "data-status": a.status,
      "data-rank": a.rank || 0, "data-acceptance": accepted, "data-ref": a.ref || "" },
      el("h5", {}, `Attempt ${a.attempt}: ${verdict}`),
      el("p", {}, `tokens ${a.tokens.prompt}/${a.tokens.completion} · cost ${fmtUSD(a.cost_usd)} · ${fmtMS(a.duration_ms)}`),
      el("p", {}, a.hinted ? "told why the previous attempt failed" : "not told of earlier failures"),
      a.acceptance ? el("details", { class: "acceptance" }, el("summary", {}, "acceptance " + accepted), el("pre", {}, a.acceptance)) : "",
      // The merged one is the task's commit on the branch; another kept
      // is read with git or planagent diff RUN TASK --attempt N.
      a.ref ? el("p", { class: "ref" }, "kept as ", el("code", {}, a.ref)) : "",
      a.error ? el("p", { class: "why" }, a.error) : "");
  }));
}

// acceptanceVerdict reads an attempt's acceptance output, each command
// ending with a line "(exit N)" of its own: "passed" when every one exited
// 0, "failed (exit N)" naming the first that did not, "" when none ran.
function acceptanceVerdict(text) {
  const codes = [...text.matchAll(/^\(exit (-?\d+)\)$/gm)].map((m) => Number(m[1]));
  if (!codes.length) return "";
  const bad = codes.find((c) => c !== 0);
  return bad === undefined ? "passed" : `failed (exit ${bad})`;
}

// drawDiff shows a patch line by line, additions and deletions coloured; a
// line of the new file (added or context) takes a comment when the page may
// write: click it, type, Comment.
function drawDiff(box, text, note, commentable) {
  if (!text) { box.replaceChildren(note); return; }
  const rows = [];
  let file = "", line = 0, inHunk = false;
  for (const raw of text.split("\n")) {
    let cls = "ctx", num = 0;
    if (raw.startsWith("diff --git")) { inHunk = false; cls = "file"; }
    else if (raw.startsWith("+++ ")) { file = raw.slice(4).replace(/^b\//, ""); cls = "file"; }
    else if (raw.startsWith("--- ") && !inHunk) cls = "file";
    else if (raw.startsWith("@@")) {
      const m = /\+(\d+)/.exec(raw);
      line = m ? parseInt(m[1], 10) : 0; inHunk = true; cls = "hunk";
    } else if (inHunk && raw.startsWith("+")) { cls = "add"; num = line++; }
    else if (inHunk && raw.startsWith("-")) cls = "del";
    else if (inHunk && raw.startsWith(" ")) { num = line++; }
    else cls = "meta";
    const attrs = { class: "dl " + cls };
    if (num) { attrs["data-file"] = file; attrs["data-line"] = String(num); }
    const row = el("div", attrs, el("span", { class: "num" }, num ? String(num) : ""), el("span", { class: "code" }, raw));
    if (num && commentable) row.addEventListener("click", () => openComment(row));
    rows.push(row);
  }
  box.replaceChildren(...rows);
}

function openComment(row) {
  if (row.nextSibling && row.nextSibling.classList && row.nextSibling.classList.contains("comment-form")) return;
  const ta = el("textarea", { rows: "3", placeholder: "What should change here?" });
  const msg = el("span", { class: "msg" });
  const btn = el("button", { type: "button", class: "comment-submit" }, "Comment");
  const form = el("div", { class: "comment-form" }, ta, btn, msg);
  btn.addEventListener("click", async () => {
    const r = await post(`/api/runs/${encodeURIComponent(current)}/tasks/${encodeURIComponent(shownTask)}/comments`,
      { file: row.dataset.file, line: parseInt(row.dataset.line, 10), text: ta.value });
    if (!r.ok) { msg.textContent = await r.text(); return; }
    form.remove();
    await drawReview();
  });
  row.after(form);
  ta.focus();
}

async function post(url, body) {
  return fetch(url, { method: "POST", headers: { "Content-Type": "application/json", "X-CodeAgent-Token": TOKEN }, body: JSON.stringify(body || {}) });
}

// drawReview lists the run's comments; pending ones can be sent to the
// agent as follow-up tasks (planagent resume then carries them out).
async function drawReview() {
  const box = document.getElementById("review");
  const cs = await getJSON(`/api/runs/${encodeURIComponent(current)}/review`);
  const items = cs.map((c) => el("li", { "data-comment": String(c.id), "data-state": c.follow_up ? "sent" : "pending" },
    `${c.task} ${c.file}:${c.line} — ${c.text}` + (c.follow_up ? ` (sent to ${c.follow_up})` : " (pending)")));
  const children = [items.length ? el("ul", {}, ...items) : el("p", {}, TOKEN ? "No comments yet: click a line of the diff to comment on it." : "Open the page from the URL planagent printed (with ?token=) to comment.")];
  if (TOKEN && cs.some((c) => !c.follow_up)) {
    const btn = el("button", { type: "button", id: "review-send" }, "Send to the agent");
    const msg = el("span", { class: "msg", id: "review-msg" });
    btn.addEventListener("click", async () => {
      const r = await post(`/api/runs/${encodeURIComponent(current)}/review/send`);
      if (!r.ok) { msg.textContent = await r.text(); return; }
      const out = await r.json();
      await drawReview();
      document.getElementById("review-msg-done").textContent = "Follow-up tasks added: " + out.sent.map((x) => x.follow_up).join(", ") + ". Carry them out with: " + out.next;
    });
    children.push(btn, msg);
  }
  children.push(el("p", { id: "review-msg-done", class: "msg" }));
  box.replaceChildren(...children);
}

function legend() {
  document.getElementById("legend").replaceChildren(...STATUSES.map((s) => el("span", { class: "st-" + s }, statusText(s))));
}

async function start() {
  legend();
  try {
    const rows = await loadRuns();
    const want = location.hash.slice(1);
    if (want) select(want);
    else if (rows.length) select(rows[0].id);
    else setConn("no runs yet");
  } catch (e) {
    setConn(String(e));
  }
  window.addEventListener("hashchange", () => select(location.hash.slice(1)));
  // A running attempt's bar grows between updates of the run.
  setInterval(() => { if (lastRun && lastRun.status === "running") { drawTimeline(lastRun); drawTable(lastRun); } }, 1000);
  // New runs appear in the list without a reload.
  setInterval(() => loadRuns().catch(() => {}), 10000);
}

start();
