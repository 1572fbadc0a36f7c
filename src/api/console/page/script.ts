/**
 * The console's script. Every value from data goes into the page as text
 * (textContent, never innerHTML), so a name, message or tool argument holding
 * markup shows as that markup and runs nothing. The operator key lives in memory
 * and sessionStorage and travels only in the Authorization header: the live
 * streams are read with fetch and a small SSE parser (EventSource cannot send headers).
 * String.raw: the script's backslashes reach the browser as written.
 */
export const CONSOLE_SCRIPT = String.raw`
const $ = (s) => document.querySelector(s);
let key = sessionStorage.getItem('sbkey') || '';
let skew = 0, selected = null, live = null, chat = null, lastState = null, handoffConv = null, handoffAfter = 0, handoffLive = null;
const scopes = {};
const chatConv = 'console-' + Math.random().toString(36).slice(2, 8);
const headers = (more) => Object.assign({ authorization: 'Bearer ' + key, 'content-type': 'application/json' }, more || {});
const api = (path, opts) => fetch(path, Object.assign({}, opts || {}, { headers: headers((opts || {}).headers) }));

/** An element with text children only (strings become text nodes). */
function el(tag, props, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === 'class') e.className = v; else if (k === 'data') Object.assign(e.dataset, v); else if (k.startsWith('on')) e[k] = v; else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) e.append(c instanceof Node ? c : String(c));
  return e;
}
const row = (...cells) => el('tr', {}, ...cells.map((c) => el('td', {}, c)));
function fill(sel, rows, empty) {
  const tb = $(sel + ' tbody') || $(sel); tb.replaceChildren(...rows);
  if (!rows.length && empty) tb.append(row(el('span', { class: 'muted' }, empty)));
}
const when = (iso) => iso ? new Date(iso).toLocaleString() : '';
function left(iso) {
  const s = Math.round((new Date(iso).getTime() - (Date.now() + skew)) / 1000);
  if (s <= 0) return 'expired';
  return (s >= 3600 ? Math.floor(s / 3600) + 'h ' : '') + (s >= 60 ? Math.floor(s % 3600 / 60) + 'm ' : '') + (s % 60) + 's left';
}
async function say(sel, r) {
  const j = await r.json().catch(() => ({}));
  $(sel).textContent = j.message || (j.error && j.error.message) || (r.ok ? 'done' : 'failed (' + r.status + ')');
  refresh();
}

/** Reads a server-sent event stream with fetch: onEvent(event) per data block; resolves once the server says it is live. */
function sse(path, onEvent) {
  const ctl = new AbortController();
  const ready = new Promise((resolve, reject) => {
    (async () => {
      const r = await fetch(path, { headers: headers(), signal: ctl.signal });
      if (!r.ok) throw new Error('stream refused: ' + r.status);
      const reader = r.body.getReader(); const dec = new TextDecoder(); let buf = '';
      for (;;) {
        const { value, done } = await reader.read(); if (done) break;
        buf += dec.decode(value, { stream: true }).replace(/\r\n/g, '\n');
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i); buf = buf.slice(i + 2);
          if (block.startsWith(': live')) resolve();
          const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
          if (data) { try { onEvent(JSON.parse(data)); } catch (e) { console.warn('bad event', e); } }
        }
      }
    })().catch((e) => { if (e.name !== 'AbortError') console.warn(e); reject(e); });
  });
  // The stream's own failure is reported above; a caller that never awaits ready must not get an unhandled rejection.
  ready.catch((e) => { if (e && e.name !== 'AbortError') console.debug('live stream ended', e); });
  return { ready, close: () => ctl.abort() };
}

function showLogin(msg) {
  $('#app').hidden = true; $('#logout').hidden = true; $('#login').hidden = false;
  $('#loginerr').textContent = msg || '';
}
async function refresh() {
  if (!key) return showLogin('');
  const r = await api('/v1/console/state');
  if (r.status === 401 || r.status === 403) { key = ''; sessionStorage.removeItem('sbkey'); return showLogin('That is not an operator key.'); }
  if (!r.ok) { $('#loginerr').textContent = 'The gateway answered ' + r.status + '.'; return; }
  const s = await r.json();
  const first = $('#app').hidden;
  lastState = s; skew = new Date(s.now).getTime() - Date.now();
  $('#login').hidden = true; $('#app').hidden = false; $('#logout').hidden = false;
  if (!handoffLive) handoffLive = sse('/v1/console/handoffs/events', onHandoffEvent);
  renderApprovals(s); renderRules(s); renderHealth(s); renderDropped(s); renderChart(s); renderConversations(s); renderPairing(s);
  await Promise.all([renderHandoffs(), followHandoff(), renderAccess(), renderWebhooks(), renderMemory(), renderSchedules(), first ? renderConfig() : null]);
}

function renderApprovals(s) {
  $('#noappr').hidden = s.approvals.length > 0;
  fill('#approvals', s.approvals.map((a) => {
    const buttons = el('td', {});
    const decisions = [['Approve', 'approve', 'ok'], ['Deny', 'deny', 'no']];
    // "Always" only where the engine permits a rule (never the dangerous tier, never an inexact call).
    if (a.alwaysPermitted && a.tier !== 'dangerous') decisions.push(['Always', 'always', 'ok']);
    for (const [label, decision, cls] of decisions)
      buttons.append(el('button', { class: cls, data: { code: a.code, decision }, onclick: async () => {
        const body = decision === 'always' ? { decision, scope: scopes[a.code] || 'conversation' } : { decision };
        say('#apprmsg', await api('/v1/approvals/' + a.code, { method: 'POST', body: JSON.stringify(body) }));
      } }, label));
    if (a.alwaysPermitted && a.tier !== 'dangerous') {
      // How far "Always" reaches: this conversation unless the operator says otherwise.
      const sel = el('select', { data: { scopeFor: a.code }, onchange: () => { scopes[a.code] = sel.value; } }, ...['conversation', 'sender', 'global'].map((x) => el('option', { value: x }, x)));
      sel.value = scopes[a.code] || 'conversation'; buttons.append(sel);
    }
    const conv = el('a', { href: '#', onclick: (e) => { e.preventDefault(); watch({ id: a.conversation, key: a.conversationKey || a.conversation }); } }, a.conversationKey || a.conversation);
    const tr = el('tr', { data: { approval: a.code } },
      el('td', {}, el('b', {}, a.code), el('div', { class: a.tier === 'dangerous' ? 'bad' : 'warn' }, a.tier)),
      el('td', {}, el('b', {}, a.tool),
        // The arguments in full, made visible by the gateway (escapes for invisible and control characters).
        el('code', { class: 'args' }, a.shown == null ? JSON.stringify(a.arguments) : a.shown),
        el('ul', { class: 'reasons' }, ...(a.reasons || []).map((x) => el('li', {}, x)))),
      el('td', {}, el('div', {}, 'conversation ', conv), el('div', { class: 'muted' }, 'requested by ', a.requester || 'unknown', ' via ', a.channel),
        el('div', { class: 'countdown', data: { expires: a.expiresAt } }, left(a.expiresAt))),
      buttons);
    return tr;
  }));
}
function renderRules(s) {
  const rules = s.rules || [];
  $('#norules').hidden = rules.length > 0;
  fill('#rules', rules.map((r) => {
    const where = r.scope === 'global' ? 'global' : r.scope === 'sender' ? 'sender ' + r.scopeKey : 'conversation ' + (r.conversationKey || r.scopeKey || '(unknown: matches nothing)');
    return el('tr', { data: { rule: r.id } }, el('td', {}, '#' + r.id),
      el('td', {}, r.tool, el('code', { class: 'args' }, r.shown == null ? r.pattern : r.shown), r.variable.length ? ' (variable: ' + r.variable.join(',') + ')' : ''),
      el('td', {}, where),
      el('td', {}, el('button', { class: 'no', data: { deleteRule: r.id }, onclick: async () => say('#rulemsg', await api('/v1/approvals/rules/' + r.id, { method: 'DELETE' })) }, 'Delete')));
  }));
}
function renderHealth(s) {
  const h = s.health || {};
  const out = [];
  const line = (name, ok, msg) => out.push(el('div', { class: 'check' }, name + ': ', el('span', { class: ok ? 'good' : 'bad' }, ok ? 'ok' : 'failing'), msg ? ' — ' + msg : ''));
  out.push(el('div', {}, 'ready: ', el('span', { class: h.ready ? 'good' : 'bad' }, h.ready ? 'yes' : 'no'), h.mode ? ' (mode ' + h.mode + ')' : '', h.error ? ' — ' + h.error : ''));
  for (const [name, c] of Object.entries(h.checks || {})) line(name, c.ok, c.message);
  for (const w of h.workers || []) out.push(el('div', { class: 'muted' }, 'worker ', typeof w === 'object' && w ? [w.id, w.host && 'on ' + w.host, w.lastBeatAt && 'seen ' + when(new Date(w.lastBeatAt).toISOString())].filter(Boolean).join(' ') : String(w)));
  out.push(el('div', {}, 'queue: ', s.queue ? Object.entries(s.queue).map(([k, v]) => k + ' ' + v).join(', ') : 'unknown'));
  if (!s.slots.length) out.push(el('div', { class: 'bad' }, 'no provider slots'));
  for (const x of s.slots) out.push(el('div', {}, 'slot ' + x.id + ' (' + x.model + '): ', el('span', { class: x.cooling ? 'bad' : 'good' }, x.cooling ? 'cooling' : 'ready')));
  $('#health').replaceChildren(...out);
}
function renderDropped(s) {
  fill('#dropped', (s.dropped || []).map((d) => row(d.channel, d.reason, String(d.count))), 'none dropped since this process started');
}
function renderChart(s) {
  const L = s.latencies, max = Math.max(1, ...L), svg = $('#chart');
  svg.replaceChildren();
  if (L.length > 1) {
    const p = document.createElementNS('http://www.w3.org/2000/svg', 'polyline');
    p.setAttribute('fill', 'none'); p.setAttribute('stroke', '#3461c1'); p.setAttribute('stroke-width', '2');
    p.setAttribute('points', L.map((v, i) => (i * 300 / (L.length - 1)).toFixed(1) + ',' + (78 - v / max * 74).toFixed(1)).join(' '));
    svg.append(p);
  }
  $('#chartlabel').textContent = L.length ? L.length + ' turns, max ' + max + ' ms, last ' + L[L.length - 1] + ' ms' : 'no turns yet';
}
function renderConversations(s) {
  fill('#convs', s.conversations.map((c) => {
    const tr = el('tr', { data: { id: c.id, state: c.state }, onclick: () => watch(c) }, ...[c.key, c.channel, c.sender || '', when(c.lastActivity)].map((x) => el('td', {}, x)),
      el('td', { class: c.state === 'parked' ? 'warn' : c.state === 'running' ? 'good' : 'muted' }, c.state));
    if (c.id === selected) tr.className = 'sel';
    return tr;
  }), 'no conversations yet');
}
function renderPairing(s) {
  fill('#pairing', s.pairing.map((p) => row(p.channel, p.sender, el('b', {}, p.code), left(p.expiresAt),
    el('button', { class: 'ok', data: { pair: p.code }, onclick: async () => {
      const x = await api('/v1/access/pairing/' + p.code, { method: 'POST' }); const j = await x.json();
      $('#accmsg').textContent = j.ok ? p.sender + ' may talk to the agent now' : j.error.message; refresh();
    } }, 'Approve'))), 'no pairing requests');
}
async function setAccess(channel, sender, status) {
  say('#accmsg', await api('/v1/access', { method: 'POST', body: JSON.stringify({ channel, sender, status }) }));
}
async function renderAccess() {
  const r = await api('/v1/access'); if (!r.ok) return;
  const rows = (await r.json()).data.filter((a) => a.status !== 'pending');
  fill('#access', rows.map((a) => el('tr', { data: { access: a.channel + ':' + a.sender } }, ...[a.channel, a.sender].map((x) => el('td', {}, x)),
    el('td', { class: a.status === 'allowed' ? 'good' : 'bad' }, a.status),
    el('td', {}, a.status === 'allowed' ? el('button', { class: 'no', onclick: () => setAccess(a.channel, a.sender, 'denied') }, 'Deny') : el('button', { class: 'ok', onclick: () => setAccess(a.channel, a.sender, 'allowed') }, 'Allow')))), 'nobody listed');
}
async function renderWebhooks() {
  const [a, b] = await Promise.all([api('/v1/events/subscribers'), api('/v1/events/dead-letters')]);
  if (a.ok) fill('#subscribers', (await a.json()).data.map((x) => row(x.id, x.url, x.events.join(', '), 'secret in $' + x.secretEnv)), 'no subscribers');
  if (b.ok) fill('#deadletters', (await b.json()).data.map((d) => row(when(d.at), d.subscriber, typeof d.event === 'string' ? d.event : (d.event && d.event.type) || JSON.stringify(d.event), d.attempts + ' attempts', d.error)), 'no dead letters');
}
async function renderMemory() {
  const r = await api('/v1/memory'); if (!r.ok) return;
  fill('#memory', (await r.json()).data.map((m) => el('tr', { data: { note: m.id } }, ...['#' + m.id, m.scope + (m.key ? ' ' + m.key : ''), m.note].map((x) => el('td', {}, x)),
    el('td', {}, el('button', { class: 'no', onclick: async () => say('#memmsg', await api('/v1/memory/' + m.id, { method: 'DELETE' })) }, 'Delete')))), 'no notes');
}
/** Schedules with their last run: undelivered (the turn answered, the delivery gave up) and failed runs stand out. */
async function renderSchedules() {
  const r = await api('/v1/schedules'); if (!r.ok) return;
  const cls = (st) => st === 'undelivered' || st === 'failed' ? 'bad' : st === 'over_budget' || st === 'skipped' || st === 'pending' ? 'warn' : st === 'delivered' ? 'good' : 'muted';
  fill('#schedules', (await r.json()).data.map((x) => el('tr', { data: { schedule: x.id, status: x.lastRun ? x.lastRun.status : 'none' } },
    ...[x.id, x.conversationKey, (x.cron || when(x.at)) + ' ' + x.tz, x.prompt, x.nextAt ? when(x.nextAt) : 'done'].map((v) => el('td', {}, v)),
    el('td', { class: x.lastRun ? cls(x.lastRun.status) : 'muted' }, x.lastRun ? x.lastRun.status + ' (' + when(x.lastRun.tick) + ')' : 'not run yet'),
    el('td', {}, el('button', { class: 'no', data: { deleteSchedule: x.id }, onclick: async () => say('#schmsg', await api('/v1/schedules/' + x.id, { method: 'DELETE' })) }, 'Delete')))), 'no schedules');
}
async function addSchedule() {
  const v = (id) => $(id).value.trim();
  const body = { conversation: v('#schconv'), prompt: v('#schprompt') };
  if (v('#schcron')) body.cron = v('#schcron'); if (v('#schat')) body.at = v('#schat'); if (v('#schtz')) body.tz = v('#schtz');
  const r = await api('/v1/schedules', { method: 'POST', body: JSON.stringify(body) });
  const j = await r.clone().json().catch(() => ({}));
  if (r.ok) { $('#schmsg').textContent = 'Scheduled ' + j.id; refresh(); } else say('#schmsg', r);
}
/** Open requests for a human and active takeovers; Take over / Open select one for the live view below. */
async function renderHandoffs() {
  const r = await api('/v1/handoffs'); if (!r.ok) return;
  fill('#handoffs', (await r.json()).data.map((h) => el('tr', { data: { handoff: h.id, conversation: h.conversation, state: h.state } },
    ...[h.id, h.conversationKey, h.state, h.urgency, h.reason || '', h.operator || '', when(h.takenAt || h.requestedAt)].map((v) => el('td', { class: h.state === 'requested' ? 'warn' : '' }, v)),
    el('td', {}, h.state === 'requested'
      ? el('button', { class: 'ok', data: { take: h.conversation }, onclick: () => takeOver(h.conversation) }, 'Take over')
      : el('button', { data: { open: h.conversation }, onclick: () => openHandoff(h.conversation) }, 'Open')))), 'none');
}
async function takeOver(conv) {
  if (!conv) return;
  const r = await api('/v1/conversations/' + encodeURIComponent(conv) + '/takeover', { method: 'POST', body: '{}' });
  const j = await r.clone().json().catch(() => ({}));
  if (r.ok) { $('#homsg').textContent = 'Taken over: the agent will not answer until you hand back.'; openHandoff(j.handoff.conversation); refresh(); } else say('#homsg', r);
}
/** The live view of one taken-over conversation: its messages (the user's and the operators', with who wrote them), polled with refresh(). */
function openHandoff(conv) {
  handoffConv = conv; handoffAfter = 0; $('#holog').replaceChildren(); $('#hosel').textContent = conv; followHandoff();
}
async function followHandoff() {
  const conv = handoffConv; if (!conv) return;
  const r = await api('/v1/conversations/' + encodeURIComponent(conv) + '/messages?after=' + handoffAfter);
  if (!r.ok || conv !== handoffConv) return;
  const data = (await r.json()).data; if (conv !== handoffConv) return;
  const box = $('#holog');
  for (const m of data) { if (m.id <= handoffAfter) continue; box.append(messageEl(m)); handoffAfter = m.id; }
  if (data.length) box.scrollTop = box.scrollHeight;
}
/** Live: a message of the open conversation is shown as it comes (the poll in refresh() catches up on anything missed); a change of state redraws the list. */
function onHandoffEvent(e) {
  if (e.type === 'message' && e.conversation === handoffConv && e.id > handoffAfter) {
    const box = $('#holog'); box.append(messageEl({ role: e.role, author: e.author, content: e.text })); handoffAfter = e.id; box.scrollTop = box.scrollHeight;
  } else if (e.type === 'state') renderHandoffs();
}
async function operatorSay() {
  const text = $('#hotext').value.trim(); if (!text || !handoffConv) return;
  const r = await api('/v1/conversations/' + encodeURIComponent(handoffConv) + '/operator-messages', { method: 'POST', body: JSON.stringify({ text }) });
  if (r.ok) { $('#hotext').value = ''; $('#homsg').textContent = 'Sent.'; followHandoff(); } else say('#homsg', r);
}
async function handBack() {
  if (!handoffConv) return;
  const note = $('#honote').value.trim();
  const r = await api('/v1/conversations/' + encodeURIComponent(handoffConv) + '/handback', { method: 'POST', body: JSON.stringify(note ? { note } : {}) });
  if (r.ok) { $('#honote').value = ''; $('#homsg').textContent = 'Handed back to the agent.'; followHandoff(); refresh(); } else say('#homsg', r);
}
async function renderConfig() {
  const r = await api('/v1/console/config'); if (!r.ok) return;
  $('#config').textContent = JSON.stringify((await r.json()).config, null, 2);
}

/** One transcript message as text: its role, its text, its tool calls. */
function messageEl(m) {
  const calls = (m.toolCalls || []).map((c) => el('div', { class: 'muted' }, '[tool call ' + c.name + ' ' + JSON.stringify(c.arguments) + ']'));
  return el('div', { class: 'msg ' + m.role }, el('b', {}, m.role + (m.tool ? ' ' + m.tool : '') + (m.author ? ' ' + m.author : '') + '> '), m.content, ...calls);
}
/** Shows a conversation: its stored transcript, then its live turn events appended. */
async function watch(c) {
  selected = c.id; $('#convname').textContent = c.key;
  const box = $('#transcript'); box.replaceChildren();
  if (live) live.close();
  const pending = [];
  let loaded = false;
  live = sse('/v1/console/conversations/' + encodeURIComponent(c.id) + '/events', (e) => loaded ? appendEvent(box, e) : pending.push(e));
  // A stream that could not open: the stored transcript below still shows.
  await live.ready.catch((e) => console.warn('live events unavailable', e));
  // The whole stored transcript, a page (200 messages) at a time.
  for (let after = 0; ;) {
    const r = await api('/v1/conversations/' + encodeURIComponent(c.id) + '/messages?after=' + after);
    if (!r.ok || selected !== c.id) break;
    const data = (await r.json()).data;
    for (const m of data) box.append(messageEl(m));
    if (data.length < 200) break;
    after = data[data.length - 1].id;
  }
  loaded = true; for (const e of pending) appendEvent(box, e);
  box.append(el('div', { class: 'muted' }, '— live —'));
  box.scrollTop = box.scrollHeight;
  if (lastState) renderConversations(lastState);
}
function appendEvent(box, e) {
  const add = (t, cls) => box.append(cls ? el('span', { class: cls }, t) : t);
  if (e.type === 'turn_start') add('\n— turn ' + e.turnId + ' (attempt ' + e.attempt + ')\n', 'muted');
  else if (e.type === 'text_delta') add(e.delta);
  else if (e.type === 'tool_start') add('\n[tool ' + e.name + ']\n', 'muted');
  else if (e.type === 'approval_requested') add('\n[approval ' + e.approval.code + ' requested: ' + e.approval.tool + ']\n', 'warn');
  else if (e.type === 'done') add('\n[done: ' + e.finishReason + ']\n', 'muted');
  box.scrollTop = box.scrollHeight;
}

/** The web chat: its text comes from the conversation's events, so an answer resumed after an approval shows too. */
async function send() {
  const text = $('#msg').value.trim(); if (!text) return; $('#msg').value = '';
  const log = $('#chatlog');
  if (!chat) {
    chat = sse('/v1/console/chat/' + chatConv + '/events', (e) => {
      if (e.type === 'text_delta') log.append(e.delta);
      else if (e.type === 'approval_requested') log.append(el('span', { class: 'warn' }, '\n[approval ' + e.approval.code + ' requested: ' + e.approval.tool + ' — decide it under Pending approvals]\n'));
      else if (e.type === 'done' && e.finishReason === 'approval_pending') { log.append(el('span', { class: 'muted' }, '[waiting for approval]\nagent> ')); refresh(); }
      else if (e.type === 'done') { log.append(e.finishReason === 'stop' ? '' : el('span', { class: 'muted' }, ' [' + e.finishReason + ']')); refresh(); }
      log.scrollTop = log.scrollHeight;
    });
    await chat.ready.catch((e) => console.warn('live events unavailable', e));
  }
  log.append(el('span', { class: 'good' }, '\nyou> '), text, '\nagent> ');
  const r = await api('/v1/chat/completions', { method: 'POST', headers: { 'x-switchboard-conversation': chatConv }, body: JSON.stringify({ model: 'default', messages: [{ role: 'user', content: text }] }) });
  if (!r.ok) log.append(el('span', { class: 'bad' }, '[error ' + r.status + ']'));
}

$('#go').onclick = () => { key = $('#key').value; $('#key').value = ''; sessionStorage.setItem('sbkey', key); refresh(); };
$('#key').onkeydown = (e) => { if (e.key === 'Enter') $('#go').onclick(); };
$('#logout').onclick = () => { key = ''; sessionStorage.removeItem('sbkey'); if (live) live.close(); if (chat) chat.close(); if (handoffLive) handoffLive.close(); live = chat = handoffLive = null; showLogin(''); };
for (const [id, status] of [['#accallow', 'allowed'], ['#accdeny', 'denied']])
  $(id).onclick = () => { const c = $('#accchannel').value.trim(), who = $('#accsender').value.trim(); if (c && who) setAccess(c, who, status); };
$('#schadd').onclick = addSchedule;
$('#hotake').onclick = () => takeOver($('#hoconv').value.trim());
$('#hosay').onclick = operatorSay; $('#hotext').onkeydown = (e) => { if (e.key === 'Enter') operatorSay(); };
$('#hoback').onclick = handBack;
$('#send').onclick = send; $('#msg').onkeydown = (e) => { if (e.key === 'Enter') send(); };
if (key) refresh();
setInterval(() => { if (key && !$('#app').hidden) refresh(); }, 2000);
setInterval(() => { for (const d of document.querySelectorAll('[data-expires]')) d.textContent = left(d.dataset.expires); }, 1000);
`;
