/** The console's markup: a login box, then the dashboard (hidden until an operator key is accepted). */
export const CONSOLE_BODY = `
<header><h1>Switchboard console</h1><span id="who"></span><button id="logout" hidden>Sign out</button></header>
<div id="login"><p>Operator key: <input id="key" type="password" size="32" autocomplete="off"> <button id="go">Open</button></p><p id="loginerr" class="bad"></p></div>
<main id="app" hidden>
<section class="wide"><h2>Pending approvals</h2><table id="approvals"><tbody></tbody></table><p id="noappr">none</p><p id="apprmsg"></p></section>
<section class="wide"><h2>Handoffs (human takeover)</h2><table id="handoffs"><thead><tr><th>handoff</th><th>conversation</th><th>state</th><th>urgency</th><th>reason</th><th>operator</th><th>since</th><th></th></tr></thead><tbody></tbody></table>
<p><input id="hoconv" size="26" placeholder="conversation (id or key)"> <button id="hotake" class="ok">Take over</button> <span id="hosel" class="muted">no conversation open</span></p>
<div id="holog" class="log"></div>
<p><input id="hotext" size="60" placeholder="message to the user"> <button id="hosay">Send</button> <input id="honote" size="30" placeholder="note for the agent (optional)"> <button id="hoback" class="no">Hand back</button></p><p id="homsg"></p></section>
<section><h2>Health</h2><div id="health"></div></section>
<section><h2>Dropped messages (not answered, by reason)</h2><table id="dropped"><thead><tr><th>channel</th><th>reason</th><th>count</th></tr></thead><tbody></tbody></table></section>
<section><h2>Recent turn latency (ms, time parked for approval excluded)</h2><svg id="chart" width="100%" height="80" viewBox="0 0 300 80" preserveAspectRatio="none"></svg><div id="chartlabel"></div></section>
<section><h2>Conversations</h2><table id="convs"><thead><tr><th>conversation</th><th>channel</th><th>sender</th><th>last activity</th><th>state</th></tr></thead><tbody></tbody></table></section>
<section><h2>Conversation: <span id="convname">pick a conversation</span></h2><div id="transcript" class="log"></div></section>
<section><h2>Access</h2><h3>Pairing requests</h3><table id="pairing"><tbody></tbody></table><h3>Allowed and denied senders</h3><table id="access"><tbody></tbody></table>
<p><input id="accchannel" size="8" placeholder="channel"> <input id="accsender" size="18" placeholder="sender"> <button id="accallow" class="ok">Allow</button><button id="accdeny" class="no">Deny</button></p><p id="accmsg"></p></section>
<section><h2>Always-allow rules</h2><table id="rules"><tbody></tbody></table><p id="norules">none</p><p id="rulemsg"></p></section>
<section><h2>Webhooks</h2><h3>Subscribers</h3><table id="subscribers"><tbody></tbody></table><h3>Dead letters</h3><table id="deadletters"><tbody></tbody></table></section>
<section class="wide"><h2>Schedules</h2><table id="schedules"><thead><tr><th>schedule</th><th>conversation</th><th>when</th><th>prompt</th><th>next</th><th>last run</th><th></th></tr></thead><tbody></tbody></table>
<p><input id="schconv" size="22" placeholder="conversation (id or key)"> <input id="schcron" size="14" placeholder="cron (0 9 * * 1-5)"> or <input id="schat" size="22" placeholder="at (2026-12-04T09:00:00+01:00)"> <input id="schtz" size="14" placeholder="tz (Europe/Amsterdam)"> <input id="schprompt" size="30" placeholder="prompt"> <button id="schadd" class="ok">Schedule</button></p><p id="schmsg"></p></section>
<section><h2>Memory notes</h2><table id="memory"><tbody></tbody></table><p id="memmsg"></p></section>
<section class="wide"><h2>Try the agent</h2><div id="chatlog" class="log"></div><p><input id="msg" size="80" placeholder="Say something"> <button id="send">Send</button></p></section>
<section class="wide"><h2>Configuration (secrets masked)</h2><pre id="config" class="log"></pre></section>
</main>
`;
