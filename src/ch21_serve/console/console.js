"use strict";
// The console: a client of the API like curl, in the browser. Every text from a model or a
// tool is put in the page with textContent, never as HTML.

const token = new URLSearchParams(location.search).get("token") || "";
const $ = (id) => document.getElementById(id);
const state = { sessions: [], selected: null, lastSeen: 0, streaming: false, tools: new Map(), pending: null };

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function say(text, isError) {
  const status = $("status");
  status.textContent = text;
  status.className = isError ? "error-banner" : "";
}

// ---- the API ----------------------------------------------------------------------------

async function api(method, path, body) {
  const headers = { Authorization: "Bearer " + token };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || response.status + " " + response.statusText);
  return data;
}

// Server-Sent Events over fetch (EventSource cannot send the Authorization header).
async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let id = null, data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("id: ")) id = Number(line.slice(4));
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (data) onEvent(id, JSON.parse(data));
    }
  }
}

async function openStream(method, path, body) {
  const sessionId = state.selected;
  state.streaming = true;
  try {
    const headers = { Authorization: "Bearer " + token };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (method === "GET") headers["Last-Event-ID"] = String(state.lastSeen);
    const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (!response.ok) {
      const data = await response.json().catch(() => ({}));
      throw new Error(data.error || String(response.status));
    }
    await readEvents(response, (id, event) => {
      if (state.selected !== sessionId) return;
      if (id !== null) {
        if (id <= state.lastSeen) return; // seen already, on another stream
        state.lastSeen = id;
      }
      draw(event);
    });
  } catch (error) {
    if (state.selected === sessionId) say(error.message, true);
  } finally {
    if (state.selected === sessionId) state.streaming = false;
    refreshSessions();
  }
}

// ---- the transcript, drawn as the terminal draws it -------------------------------------

function toolSummary(name, argumentsText) {
  let args = {};
  try { args = JSON.parse(argumentsText || "{}") || {}; } catch (_) { args = {}; }
  const text = (key) => (typeof args[key] === "string" && args[key] !== "" ? args[key] : null);
  let what;
  if (name === "list_files") what = [text("path") || ".", text("pattern")].filter(Boolean).join(" ");
  else if (name === "search") what = text("path") ? text("pattern") + " in " + text("path") : text("pattern") || "";
  else what = ["command", "path", "pattern", "name"].map(text).find(Boolean) || "";
  const line = (name + " " + what).replace(/\s+/g, " ").trim();
  return line.length > 120 ? line.slice(0, 119) + "…" : line;
}

const MARKS = { ok: "✓", error: "✗", denied: "⊘", interrupted: "✗", not_run: "·", unknown: "?" };

function toolLine(id, name, argumentsText) {
  const line = element("details", "tool running");
  const summary = element("summary");
  summary.append(element("span", "mark", "→"), " " + toolSummary(name, argumentsText));
  line.append(summary);
  $("transcript").append(line);
  if (id) state.tools.set(id, line);
  return line;
}

function finishTool(event) {
  const line = state.tools.get(event.id) || toolLine(event.id, event.name, event.arguments);
  const status = event.status || "ok";
  line.className = "tool " + status;
  line.querySelector(".mark").textContent = MARKS[status] || "✓";
  if (status !== "ok") line.querySelector("summary").append(" " + status.replace("_", " "));
  line.append(element("pre", "", event.content || ""));
}

function note(text, isError) {
  $("transcript").append(element("div", isError ? "note error" : "note", text));
}

function userMessage(text) {
  const pending = state.pending;
  if (pending && pending.textContent === text) {
    pending.classList.remove("pending");
    state.pending = null;
    return;
  }
  $("transcript").append(element("div", "user", text));
}

function draw(event) {
  const transcript = $("transcript");
  const atBottom = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40;
  switch (event.type) {
    case "session": if (event.message) userMessage(event.message); break;
    case "user": userMessage(event.text || ""); break;
    case "request": $("activity").textContent = "thinking…"; break;
    case "assistant":
      $("activity").textContent = "";
      if (event.text) transcript.append(markdown(event.text));
      break;
    case "tool_started": $("activity").textContent = ""; toolLine(event.id, event.name, event.arguments); break;
    case "tool_finished": finishTool(event); break;
    case "approval": refreshApprovals(); break;
    case "retry": note("retrying (attempt " + event.attempt + ") in " + (event.wait_ms / 1000).toFixed(1) + " s: " + event.reason); break;
    case "compaction": note("compacted: " + event.replaced + " earlier messages replaced by a summary"); break;
    case "notice": note(event.kind + ": " + event.text, event.kind === "warning"); break;
    case "final": break;
    case "exit":
      $("activity").textContent = "";
      if (event.code !== 0) note("stopped (exit " + event.code + "): " + (event.error || ""), true);
      refreshApprovals();
      break;
    default: if (event.text) note(event.text);
  }
  if (atBottom) transcript.scrollTop = transcript.scrollHeight;
}

// ---- Markdown, as text nodes --------------------------------------------------------------

function inline(text) {
  const out = document.createDocumentFragment();
  const pattern = /(`+)([\s\S]*?)\1|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|\[([^\]]+)\]\(([^)\s]+)\)/g;
  let last = 0, match;
  while ((match = pattern.exec(text)) !== null) {
    if (match.index > last) out.append(text.slice(last, match.index));
    if (match[1]) out.append(element("code", "", match[2]));
    else if (match[3] || match[4]) out.append(element("strong", "", match[3] || match[4]));
    else if (match[5]) out.append(element("em", "", match[5]));
    else out.append(match[6] + " (" + match[7] + ")");
    last = pattern.lastIndex;
  }
  if (last < text.length) out.append(text.slice(last));
  return out;
}

function markdown(text) {
  const root = element("div", "answer");
  const lines = text.replace(/\r\n/g, "\n").split("\n");
  let at = 0, list = null, paragraph = null;
  const close = () => { list = null; paragraph = null; };
  while (at < lines.length) {
    const line = lines[at];
    const fence = line.match(/^\s*(```+|~~~+)\s*([\w+-]*)/);
    if (fence) {
      close();
      const code = [];
      at++;
      while (at < lines.length && !lines[at].trim().startsWith(fence[1])) code.push(lines[at++]);
      at++;
      const pre = element("pre");
      pre.append(element("code", fence[2] ? "language-" + fence[2] : "", code.join("\n")));
      root.append(pre);
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    const item = line.match(/^\s*([-*+]|\d+[.)])\s+(.*)$/);
    if (line.trim() === "") close();
    else if (heading) { close(); const h = element("h" + Math.min(6, heading[1].length + 2)); h.append(inline(heading[2])); root.append(h); }
    else if (/^\s*\|.*\|\s*$/.test(line)) { close(); at = table(lines, at, root); continue; }
    else if (line.startsWith(">")) { close(); const quote = element("blockquote"); quote.append(inline(line.replace(/^>\s?/, ""))); root.append(quote); }
    else if (item) {
      const ordered = /\d/.test(item[1]);
      if (!list || (list.tagName === "OL") !== ordered) { list = element(ordered ? "ol" : "ul"); root.append(list); paragraph = null; }
      const li = element("li"); li.append(inline(item[2])); list.append(li);
    } else if (paragraph) { paragraph.append("\n", inline(line)); }
    else { list = null; paragraph = element("p"); paragraph.append(inline(line)); root.append(paragraph); }
    at++;
  }
  return root;
}

function table(lines, at, root) {
  const rows = [];
  while (at < lines.length && /^\s*\|.*\|\s*$/.test(lines[at])) rows.push(lines[at++]);
  const cells = (row) => row.trim().slice(1, -1).split("|").map((cell) => cell.trim());
  const node = element("table");
  rows.filter((row) => !/^\s*\|[\s:|-]+\|\s*$/.test(row)).forEach((row, index) => {
    const tr = element("tr");
    for (const cell of cells(row)) { const td = element(index === 0 ? "th" : "td"); td.append(inline(cell)); tr.append(td); }
    node.append(tr);
  });
  root.append(node);
  return at;
}

// ---- sessions -----------------------------------------------------------------------------

async function refreshSessions() {
  try {
    const { sessions } = await api("GET", "/sessions");
    state.sessions = sessions;
    const list = $("session-list");
    list.replaceChildren(...sessions.map((session) => {
      const li = element("li");
      li.dataset.id = session.id;
      li.setAttribute("aria-selected", String(session.id === state.selected));
      li.append(element("div", "prompt", session.prompt || "(no message yet)"));
      const meta = element("div", "meta");
      meta.append(element("span", "", session.id), element("span", "", session.state || ""));
      if (session.activity && session.activity !== "idle") meta.append(element("span", "badge " + session.activity, session.activity));
      if (session.queued) meta.append(element("span", "badge", session.queued + " queued"));
      li.append(meta);
      li.addEventListener("click", () => select(session.id));
      return li;
    }));
    const current = sessions.find((session) => session.id === state.selected);
    if (current && current.activity !== "idle" && !state.streaming) {
      openStream("GET", "/sessions/" + encodeURIComponent(current.id) + "/events");
    }
    if (current && current.approvals !== $("approvals").childElementCount) refreshApprovals();
    say("connected");
  } catch (error) {
    say(error.message, true);
  }
}

async function select(id) {
  state.selected = id;
  state.lastSeen = 0;
  state.streaming = false;
  state.tools = new Map();
  state.pending = null;
  $("transcript").replaceChildren();
  $("approvals").replaceChildren();
  $("activity").textContent = "";
  for (const li of $("session-list").children) li.setAttribute("aria-selected", String(li.dataset.id === id));
  for (const control of [$("message"), $("send"), $("cancel")]) control.disabled = false;
  try {
    const session = await api("GET", "/sessions/" + encodeURIComponent(id));
    if (state.selected !== id) return;
    $("session-head").textContent = [session.id, session.root, session.model].filter(Boolean).join(" · ");
    state.lastSeen = session.last_event || 0;
    for (const event of session.transcript || []) draw(event);
    refreshApprovals();
    refreshSessions();
  } catch (error) {
    say(error.message, true);
  }
}

async function send() {
  const text = $("message").value;
  if (!state.selected || text.trim() === "") return;
  $("message").value = "";
  state.pending = element("div", "user pending", text);
  $("transcript").append(state.pending);
  const path = "/sessions/" + encodeURIComponent(state.selected) + "/messages";
  if (state.streaming) {
    api("POST", path, { message: text }).catch((error) => say(error.message, true));
  } else {
    openStream("POST", path + "/stream", { message: text });
  }
}

async function refreshApprovals() {
  const id = state.selected;
  if (!id) return;
  try {
    const { approvals } = await api("GET", "/sessions/" + encodeURIComponent(id) + "/approvals");
    if (state.selected !== id) return;
    $("approvals").replaceChildren(...approvals.map((approval) => approvalBox(id, approval)));
  } catch (error) {
    say(error.message, true);
  }
}

function approvalBox(id, approval) {
  const box = element("div", "approval");
  box.dataset.call = approval.call_id;
  box.append(element("p", "question", approval.question));
  if (approval.diff) {
    const pre = element("pre", "diff");
    for (const line of approval.diff.split("\n")) {
      const header = line.startsWith("+++ ") || line.startsWith("--- ");
      const kind = header || line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "";
      pre.append(element("span", kind, line + "\n"));
    }
    box.append(pre);
  }
  const row = element("div", "row");
  const reason = element("input");
  reason.placeholder = "reason for the model (optional, with Deny)";
  const allow = element("button", "allow", "Allow");
  const deny = element("button", "deny", "Deny");
  const decide = async (decision) => {
    allow.disabled = deny.disabled = true;
    try {
      const path = "/sessions/" + encodeURIComponent(id) + "/approvals/" + encodeURIComponent(approval.call_id);
      await api("POST", path, { decision, reason: reason.value });
      box.remove();
    } catch (error) {
      say(error.message, true);
      allow.disabled = deny.disabled = false;
    }
  };
  allow.addEventListener("click", () => decide("allow"));
  deny.addEventListener("click", () => decide("deny"));
  row.append(reason, allow, deny);
  box.append(row);
  return box;
}

// ---- the task board -----------------------------------------------------------------------

const COLUMNS = [["pending", "pending"], ["in_progress", "in progress"], ["done", "done"], ["failed", "failed"], ["needs_human", "needs human"]];

async function refreshTasks() {
  try {
    const { tasks } = await api("GET", "/tasks");
    $("board").replaceChildren(...COLUMNS.map(([status, title]) => {
      const column = element("section", "column");
      column.dataset.status = status;
      const mine = tasks.filter((task) => task.status === status);
      const heading = element("h2");
      heading.append(element("span", "", title), element("span", "count", String(mine.length)));
      column.append(heading, ...mine.map(card));
      return column;
    }));
    say("connected");
  } catch (error) {
    say(error.message, true);
  }
}

function card(task) {
  const node = element("div", "card");
  node.dataset.id = task.id;
  node.append(element("div", "name", task.id + " · " + task.name));
  const meta = element("div", "meta");
  if (task.attempts) meta.append(element("span", "", task.attempts + " attempts"));
  if (task.verify_command) meta.append(element("span", "", "verify: " + task.verify_command));
  node.append(meta);
  if (task.last_error) node.append(element("div", "last-error", task.last_error));
  if (task.status !== "pending") {
    const reset = element("button", "reset", "Reset");
    reset.addEventListener("click", async () => {
      try { await api("POST", "/tasks/" + encodeURIComponent(task.id) + "/reset"); } catch (error) { say(error.message, true); }
      refreshTasks();
    });
    node.append(reset);
  }
  return node;
}

// ---- wiring -------------------------------------------------------------------------------

function show(view) {
  $("sessions-view").hidden = view !== "sessions";
  $("tasks-view").hidden = view !== "tasks";
  $("show-sessions").setAttribute("aria-pressed", String(view === "sessions"));
  $("show-tasks").setAttribute("aria-pressed", String(view === "tasks"));
  if (view === "tasks") refreshTasks(); else refreshSessions();
}

$("show-sessions").addEventListener("click", () => show("sessions"));
$("show-tasks").addEventListener("click", () => show("tasks"));
$("composer").addEventListener("submit", (event) => { event.preventDefault(); send(); });
$("message").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) { event.preventDefault(); send(); }
});
$("cancel").addEventListener("click", () => {
  if (state.selected) api("POST", "/sessions/" + encodeURIComponent(state.selected) + "/cancel").catch((error) => say(error.message, true));
});
$("new-session").addEventListener("submit", async (event) => {
  event.preventDefault();
  const root = $("new-root").value.trim();
  try {
    const { id } = await api("POST", "/sessions", root ? { root } : {});
    $("new-root").value = "";
    await refreshSessions();
    select(id);
  } catch (error) {
    say(error.message, true);
  }
});
$("add-task").addEventListener("submit", async (event) => {
  event.preventDefault();
  const name = $("task-name").value.trim();
  if (!name) return;
  const verify = $("task-verify").value.trim();
  try {
    await api("POST", "/tasks", verify ? { name, verify } : { name });
    $("task-name").value = "";
    $("task-verify").value = "";
  } catch (error) {
    say(error.message, true);
  }
  refreshTasks();
});

// The lists are polled (every 2 s, while the page is visible); a running session's events stream.
setInterval(() => {
  if (document.hidden) return;
  if ($("tasks-view").hidden) refreshSessions(); else refreshTasks();
}, 2000);
if (!token) say("no token in this page's URL: open the URL mini-agent serve printed", true);
show("sessions");
