/** The operator console: one self-contained page (no build step, no external assets). */
export const CONSOLE_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Switchboard console</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
header{background:#1d2330;color:#fff;padding:10px 16px;display:flex;gap:12px;align-items:center}
header h1{font-size:16px;margin:0;flex:1}
main{display:grid;grid-template-columns:1fr 1fr;gap:12px;padding:12px}
section{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:10px 12px}
h2{font-size:13px;text-transform:uppercase;letter-spacing:.04em;color:#56607a;margin:0 0 8px}
table{width:100%;border-collapse:collapse}td,th{text-align:left;padding:4px 6px;border-bottom:1px solid #eef0f3;font-size:13px}
tr.sel{background:#eef4ff}tr[data-id]{cursor:pointer}
button{font:inherit;padding:3px 10px;border-radius:4px;border:1px solid #9aa3b5;background:#fff;cursor:pointer}
button.ok{border-color:#2f8f4e;color:#2f8f4e}button.no{border-color:#b3362d;color:#b3362d}
.muted{color:#56607a;font-size:12px}.bad{color:#b3362d}.good{color:#2f8f4e}#live,#chatlog{white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:12px;max-height:260px;overflow:auto;background:#fafbfc;border:1px solid #eef0f3;padding:6px}
#login{padding:40px;text-align:center}input{font:inherit;padding:4px 6px}
code.args{white-space:pre-wrap;word-break:break-all;font-size:12px}select{font:inherit;padding:2px}
</style></head>
<body>
<header><h1>Switchboard console</h1><span id="who"></span></header>
<div id="login"><p>Operator key: <input id="key" type="password" size="32"> <button id="go">Open</button></p><p id="loginerr" class="bad"></p></div>
<main id="app" hidden>
<section><h2>Pending approvals</h2><table id="approvals"><tbody></tbody></table><p id="noappr">none</p><p id="apprmsg"></p><h2 style="margin-top:10px">Always-allow rules</h2><table id="rules"><tbody></tbody></table><p id="norules">none</p><h2 style="margin-top:10px">Pairing requests</h2><table id="pairing"><tbody></tbody></table></section>
<section><h2>Health</h2><div id="health"></div><h2 style="margin-top:10px">Recent turn latency (ms)</h2><svg id="chart" width="100%" height="80" viewBox="0 0 300 80" preserveAspectRatio="none"></svg><div id="chartlabel"></div></section>
<section><h2>Conversations</h2><table id="convs"><thead><tr><th>conversation</th><th>channel</th><th>turns</th><th>last turn</th></tr></thead><tbody></tbody></table></section>
<section><h2>Live: <span id="livename">pick a conversation</span></h2><div id="live"></div></section>
<section style="grid-column:1 / span 2"><h2>Try the agent</h2><div id="chatlog"></div><p><input id="msg" size="80" placeholder="Say something"> <button id="send">Send</button></p></section>
</main>
<script>
const $ = (s) => document.querySelector(s);
let key = sessionStorage.getItem('sbkey') || '';
let live = null, selected = null;
const scopes = {};
const chatConv = 'console-' + Math.random().toString(36).slice(2, 8);
const api = (path, opts = {}) => fetch(path, { ...opts, headers: { authorization: 'Bearer ' + key, 'content-type': 'application/json', ...(opts.headers || {}) } });
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
async function refresh() {
  const r = await api('/v1/console/state');
  if (r.status === 401) { $('#loginerr').textContent = 'That is not an operator key.'; $('#app').hidden = true; $('#login').hidden = false; return; }
  const s = await r.json();
  $('#login').hidden = true; $('#app').hidden = false;
  const ab = $('#approvals tbody'); ab.innerHTML = '';
  $('#noappr').hidden = s.approvals.length > 0;
  for (const a of s.approvals) {
    const tr = document.createElement('tr');
    // The arguments in full, made visible by the gateway (escapes for invisible and control characters, runs of spaces as ␠×N).
    tr.innerHTML = '<td><b>' + esc(a.code) + '</b></td><td>' + esc(a.tier) + '</td><td>' + esc(a.tool) + ' <code class="args">' + esc(a.shown == null ? JSON.stringify(a.arguments) : a.shown) + '</code>' + (a.alwaysPermitted ? '' : '<div class="muted">no always: ' + esc((a.reasons || []).filter((r) => r.indexOf('"Always allow" is not offered') === 0).map((r) => r.slice(31)).join('') || 'not an exact call') + '</div>') + '</td><td></td>';
    for (const [label, decision, cls] of [['Approve', 'approve', 'ok'], ['Deny', 'deny', 'no']].concat(a.alwaysPermitted ? [['Always', 'always', 'ok']] : [])) {
      const b = document.createElement('button'); b.textContent = label; b.className = cls; b.dataset.code = a.code; b.dataset.decision = decision;
      b.onclick = async () => { const body = decision === 'always' ? { decision, scope: scopes[a.code] || 'conversation' } : { decision }; const x = await api('/v1/approvals/' + a.code, { method: 'POST', body: JSON.stringify(body) }); const j = await x.json(); $('#apprmsg').textContent = j.message || (j.error && j.error.message); refresh(); };
      tr.lastChild.appendChild(b);
    }
    if (a.alwaysPermitted) {
      // How far "Always" reaches: this conversation unless the operator says otherwise.
      const sel = document.createElement('select'); sel.dataset.scopeFor = a.code;
      for (const s of ['conversation', 'sender', 'global']) { const o = document.createElement('option'); o.value = s; o.textContent = s; sel.appendChild(o); }
      sel.value = scopes[a.code] || 'conversation'; sel.onchange = () => { scopes[a.code] = sel.value; };
      tr.lastChild.appendChild(sel);
    }
    ab.appendChild(tr);
  }
  const rb = $('#rules tbody'); rb.innerHTML = '';
  $('#norules').hidden = (s.rules || []).length > 0;
  for (const r of s.rules || []) {
    const tr = document.createElement('tr'); tr.dataset.rule = r.id;
    const where = r.scope === 'global' ? 'global' : r.scope === 'sender' ? 'sender ' + r.scopeKey : 'conversation ' + (r.conversationKey || r.scopeKey || '(unknown: matches nothing)');
    tr.innerHTML = '<td>#' + esc(r.id) + '</td><td>' + esc(r.tool) + ' <code class="args">' + esc(r.shown == null ? r.pattern : r.shown) + '</code>' + (r.variable.length ? ' (variable: ' + esc(r.variable.join(',')) + ')' : '') + '</td><td>' + esc(where) + '</td><td></td>';
    const b = document.createElement('button'); b.textContent = 'Delete'; b.className = 'no'; b.dataset.deleteRule = r.id;
    b.onclick = async () => { const x = await api('/v1/approvals/rules/' + r.id, { method: 'DELETE' }); const j = await x.json(); $('#apprmsg').textContent = j.message || (j.error && j.error.message); refresh(); };
    tr.lastChild.appendChild(b); rb.appendChild(tr);
  }
  const pb = $('#pairing tbody'); pb.innerHTML = '';
  for (const p of s.pairing) {
    const tr = document.createElement('tr');
    tr.innerHTML = '<td>' + esc(p.channel) + '</td><td>' + esc(p.sender) + '</td><td><b>' + esc(p.code) + '</b></td><td></td>';
    const b = document.createElement('button'); b.textContent = 'Allow'; b.className = 'ok'; b.dataset.pair = p.code;
    b.onclick = async () => { const x = await api('/v1/access/pairing/' + p.code, { method: 'POST' }); const j = await x.json(); $('#apprmsg').textContent = j.ok ? p.sender + ' may talk to the agent now' : j.error.message; refresh(); };
    tr.lastChild.appendChild(b); pb.appendChild(tr);
  }
  const q = s.queue ? Object.entries(s.queue).map(([k, v]) => k + ' ' + v).join(', ') : 'unknown';
  $('#health').innerHTML = '<div>queue: ' + esc(q) + '</div>' + (s.slots.length ? s.slots.map((x) => '<div>slot ' + esc(x.id) + ' (' + esc(x.model) + '): <span class="' + (x.cooling ? 'bad">cooling' : 'good">ready') + '</span></div>').join('') : '<div class="bad">no provider slots</div>');
  const L = s.latencies, max = Math.max(1, ...L);
  $('#chart').innerHTML = L.length > 1 ? '<polyline fill="none" stroke="#3461c1" stroke-width="2" points="' + L.map((v, i) => (i * 300 / (L.length - 1)).toFixed(1) + ',' + (78 - v / max * 74).toFixed(1)).join(' ') + '"/>' : '';
  $('#chartlabel').textContent = L.length ? L.length + ' turns, max ' + max + ' ms, last ' + L[L.length - 1] + ' ms' : 'no turns yet';
  const cb = $('#convs tbody'); cb.innerHTML = '';
  for (const c of s.conversations) {
    const tr = document.createElement('tr'); tr.dataset.id = c.id; if (c.id === selected) tr.className = 'sel';
    tr.innerHTML = '<td>' + esc(c.key) + '</td><td>' + esc(c.channel) + '</td><td>' + c.turns + '</td><td>' + esc(c.status || '') + '</td>';
    tr.onclick = () => watch(c); cb.appendChild(tr);
  }
}
function watch(c) {
  selected = c.id; $('#livename').textContent = c.key; $('#live').textContent = '';
  if (live) live.close();
  live = new EventSource('/v1/console/conversations/' + encodeURIComponent(c.id) + '/events?key=' + encodeURIComponent(key));
  live.onmessage = (m) => { const e = JSON.parse(m.data); const el = $('#live');
    if (e.type === 'turn_start') el.textContent += '\\n— turn ' + e.turnId + ' (attempt ' + e.attempt + ')\\n';
    else if (e.type === 'text_delta') el.textContent += e.delta;
    else if (e.type === 'tool_start') el.textContent += '\\n[tool ' + e.name + ']\\n';
    else if (e.type === 'approval_requested') el.textContent += '\\n[approval ' + e.approval.code + ' requested]\\n';
    else if (e.type === 'done') el.textContent += '\\n[done: ' + e.finishReason + ']\\n';
    el.scrollTop = el.scrollHeight; };
  refresh();
}
async function send() {
  const text = $('#msg').value.trim(); if (!text) return; $('#msg').value = '';
  const log = $('#chatlog'); log.textContent += '\\nyou> ' + text + '\\nagent> ';
  const r = await api('/v1/chat/completions', { method: 'POST', headers: { 'x-switchboard-conversation': chatConv }, body: JSON.stringify({ model: 'default', stream: true, messages: [{ role: 'user', content: text }] }) });
  if (!r.ok) { log.textContent += '[error ' + r.status + ']'; return; }
  const reader = r.body.getReader(); const dec = new TextDecoder(); let buf = '';
  for (;;) { const { value, done } = await reader.read(); if (done) break; buf += dec.decode(value, { stream: true });
    let i; while ((i = buf.indexOf('\\n\\n')) >= 0) { const ev = buf.slice(0, i); buf = buf.slice(i + 2);
      const d = ev.replace(/^data: /, ''); if (!d || d === '[DONE]') continue;
      try { const j = JSON.parse(d); const t = j.choices && j.choices[0] && j.choices[0].delta && j.choices[0].delta.content; if (t) log.textContent += t; } catch (e) { /* a line that is not JSON (a keep-alive) carries no text */ } } }
  refresh();
}
$('#go').onclick = () => { key = $('#key').value; sessionStorage.setItem('sbkey', key); refresh(); };
$('#send').onclick = send; $('#msg').onkeydown = (e) => { if (e.key === 'Enter') send(); };
if (key) refresh();
setInterval(() => { if (key && !$('#app').hidden) refresh(); }, 2000);
</script></body></html>`;
