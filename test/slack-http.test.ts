/**
 * The Slack channel over the HTTP Events API, mounted on the gateway's own HTTP
 * server: signatures (raw body, five-minute window), Slack's retries, button
 * clicks as form-encoded payloads, and a provider failing mid-answer (the same
 * message is edited). Real bolt + Slack SDK against the fake Slack Web API.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, type FakeRequest, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { BOT, BOT_TOKEN, FakeSlack, postSigned, SIGNING_SECRET } from './fakes/slack-api.js';
import { eventually, readyz, startGateway, testConfig } from './support/gateway.js';

process.env.SB_TEST_SLACK_BOT = BOT_TOKEN;
process.env.SB_TEST_SLACK_SECRET = SIGNING_SECRET;
process.env.SB_TEST_KEY_A = 'key-a';
process.env.SB_TEST_KEY_B = 'key-b';

const OPERATOR = 'UOPERATOR';
const slackChannel = (slack: FakeSlack, extra: Record<string, unknown> = {}) => ({
  mode: 'http',
  apiUrl: slack.apiUrl,
  botTokenEnv: 'SB_TEST_SLACK_BOT',
  signingSecretEnv: 'SB_TEST_SLACK_SECRET',
  ...extra,
});

function model(req: FakeRequest) {
  const msgs = req.body.messages as Array<{ role: string; content: unknown }>;
  const last = msgs[msgs.length - 1]!;
  if (last.role === 'tool') return reply(`tool said: ${String(last.content).replace(/\s+/g, ' ').slice(0, 200)}`);
  const text = lastUserText(req.body);
  const run = /run: (.+)$/.exec(text);
  return run ? toolCall('shell_exec', { command: run[1] }) : reply(`You said: ${text}`);
}

describe('slack over the HTTP Events API', () => {
  let llm: FakeLlm;
  let slack: FakeSlack;
  let gw: Gateway;
  let events: string;

  const finalMessage = (channel: string, thread: string | undefined, re: RegExp) =>
    eventually(async () => slack.botMessages(channel, thread).find((m) => !m.streaming && re.test(m.text)), 20_000);
  const inboxRows = async (externalId: string) =>
    (await gw.infra.store.db.query(`select id from inbox where channel = 'slack' and external_id = $1`, [externalId])).rows.length;

  beforeAll(async () => {
    llm = new FakeLlm();
    slack = new FakeSlack();
    await Promise.all([llm.start(), slack.start()]);
    llm.respond(model);
    gw = await startGateway(
      testConfig(
        llm,
        {},
        {
          channels: { slack: slackChannel(slack) },
          access: { slack: { policy: 'open' } },
          approvals: { operators: { slack: [OPERATOR] }, timeoutMs: 60_000 },
        },
      ),
    );
    events = `${gw.url}/slack/events`;
    await eventually(async () => ((await (await readyz(gw.url!)).json()) as any).checks['channel:slack']?.ok === true);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([llm?.close(), slack?.close()]);
  });

  it('answers the url_verification challenge', async () => {
    const r = await postSigned(events, { type: 'url_verification', token: 't', challenge: 'chal-123' });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toEqual({ challenge: 'chal-123' });
  });

  it('a valid signed event is answered once; forged, expired or unsigned ones get 401 and nothing else', async () => {
    const ev = slack.userMessage({ user: 'UALICE', channel: 'D1', text: 'signed hello' });
    const body = slack.eventBody(ev);
    const ok = await postSigned(events, body);
    expect(ok.status).toBe(200);
    await finalMessage('D1', undefined, /You said: signed hello/);

    const bad = slack.userMessage({ user: 'UMALLORY', channel: 'D9', text: 'forged' });
    const badBody = slack.eventBody(bad);
    expect((await postSigned(events, badBody, { secret: 'not-the-secret' })).status).toBe(401);
    expect((await postSigned(events, badBody, { timestamp: Math.floor(Date.now() / 1000) - 6 * 60 })).status).toBe(401);
    expect((await postSigned(events, badBody, { timestamp: Math.floor(Date.now() / 1000) + 6 * 60 })).status).toBe(401);
    expect((await postSigned(events, badBody, { signature: 'v0=' + '0'.repeat(64) })).status).toBe(401);
    const unsigned = await fetch(events, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(badBody) });
    expect(unsigned.status).toBe(401);
    // The body must be the one signed: a tampered body fails.
    const tampered = await fetch(events, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-slack-request-timestamp': String(Math.floor(Date.now() / 1000)), 'x-slack-signature': 'v0=abc' },
      body: JSON.stringify(badBody),
    });
    expect(tampered.status).toBe(401);
    await new Promise((r) => setTimeout(r, 300));
    expect(await inboxRows(bad.client_msg_id)).toBe(0);
    expect(slack.botMessages('D9')).toHaveLength(0);
  });

  it("Slack's retries (X-Slack-Retry-Num) are acknowledged and answered once", async () => {
    const ev = slack.userMessage({ user: 'UALICE', channel: 'D2', text: 'retried message' });
    const body = slack.eventBody(ev);
    const [first, second] = await Promise.all([postSigned(events, body), postSigned(events, body, { retryNum: 1 })]);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect((await postSigned(events, body, { retryNum: 2 })).status).toBe(200);
    await finalMessage('D2', undefined, /You said: retried message/);
    await new Promise((r) => setTimeout(r, 500));
    expect(slack.botMessages('D2')).toHaveLength(1);
    expect(await inboxRows(ev.client_msg_id)).toBe(1);
    expect(llm.requests.filter((r) => lastUserText(r.body) === 'retried message')).toHaveLength(1);

    // Answers that are not inbox messages (an approval answer) are not repeated either.
    const answer = slack.eventBody(slack.userMessage({ user: OPERATOR, channel: 'D2', text: 'approve AAAAA' }));
    await postSigned(events, answer);
    await postSigned(events, answer, { retryNum: 1 });
    await finalMessage('D2', undefined, /no approval request with code AAAAA/);
    await new Promise((r) => setTimeout(r, 300));
    expect(slack.botMessages('D2').filter((m) => /AAAAA/.test(m.text))).toHaveLength(1);
  });

  it('a mention in a channel: answered in its thread with native streaming', async () => {
    const ev = slack.userMessage({ type: 'app_mention', user: 'UALICE', channel: 'C7', text: `<@${BOT.userId}> over http` });
    expect((await postSigned(events, slack.eventBody(ev))).status).toBe(200);
    const m = await finalMessage('C7', ev.ts, /You said: over http/);
    expect(slack.callsOf('chat.startStream').find((c) => c.args.channel === 'C7')!.args.thread_ts).toBe(ev.ts);
    expect(slack.callsOf('chat.stopStream').filter((c) => c.args.ts === m.ts)).toHaveLength(1);
  });

  it('button clicks arrive form-encoded: refused for a non-operator, decided by an operator', async () => {
    await postSigned(events, slack.eventBody(slack.userMessage({ user: 'UALICE', channel: 'D3', text: 'run: echo http >> h.txt' })));
    const request = await eventually(async () => slack.botMessages('D3').find((m) => m.blocks?.some((b) => b.type === 'actions')), 20_000);
    const code = request.blocks!.find((b) => b.type === 'actions')!.elements[0].value as string;
    const click = (user: string) =>
      postSigned(events, slack.blockAction({ user, message: slack.messages.get(request.ts)!, actionId: 'sb_approve', value: code }), { form: true });
    const forged = await postSigned(events, slack.blockAction({ user: OPERATOR, message: request, actionId: 'sb_approve', value: code }), {
      form: true,
      secret: 'nope',
    });
    expect(forged.status).toBe(401);
    expect((await click('UALICE')).status).toBe(200);
    await eventually(async () => slack.ephemerals.find((e) => e.user === 'UALICE' && /Only an operator/.test(e.text)));
    expect((await gw.infra.approvals.byCode(code))!.status).toBe('pending');
    expect((await click(OPERATOR)).status).toBe(200);
    await eventually(async () => (JSON.stringify(slack.messages.get(request.ts)!.blocks).includes(`Approved* by <@${OPERATOR}>`) ? true : undefined));
    const done = await finalMessage('D3', undefined, /tool said/);
    expect(done.text).toContain('exit code 0');
  });
});

describe('slack: a provider failing mid-answer', () => {
  let a: FakeLlm;
  let b: FakeLlm;
  let slack: FakeSlack;
  let gw: Gateway;
  let events: string;

  beforeAll(async () => {
    a = new FakeLlm();
    b = new FakeLlm();
    slack = new FakeSlack();
    await Promise.all([a.start(), b.start(), slack.start()]);
    a.respond((req) => reply(`A says ${lastUserText(req.body)}`));
    b.respond((req) => reply(`B says ${lastUserText(req.body)}`));
    gw = await startGateway(
      testConfig(
        null,
        {},
        {
          providers: [
            { id: 'primary', api: 'openai-completions', model: 'fake-a', baseUrl: a.openaiBaseUrl, apiKeyEnv: 'SB_TEST_KEY_A' },
            { id: 'backup', api: 'openai-completions', model: 'fake-b', baseUrl: b.openaiBaseUrl, apiKeyEnv: 'SB_TEST_KEY_B' },
          ],
          fallback: { busyRetryMs: 1_000, timeouts: { connectMs: 2_000, firstTokenMs: 2_000, idleMs: 700, totalMs: 10_000 } },
          channels: { slack: slackChannel(slack, { updateIntervalMs: 300 }) },
          access: { slack: { policy: 'open' } },
        },
      ),
    );
    events = `${gw.url}/slack/events`;
    await eventually(async () => ((await (await readyz(gw.url!)).json()) as any).checks['channel:slack']?.ok === true);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([a?.close(), b?.close(), slack?.close()]);
  });

  afterEach(async () => {
    for (const id of ['primary', 'backup']) await gw.infra.cooldowns.clear(id);
  });

  const halfThenStall = () => a.enqueue([{ kind: 'text', text: 'half0 half1 half2 half3 half4 ', tokenDelayMs: 60 }, { kind: 'stall' }]);

  it('native stream in a thread: the partial answer is withdrawn by editing the same message', async () => {
    halfThenStall();
    const ev = slack.userMessage({ type: 'app_mention', user: 'UALICE', channel: 'C1', text: `<@${BOT.userId}> question` });
    await postSigned(events, slack.eventBody(ev));
    const m = await eventually(async () => slack.botMessages('C1', ev.ts).find((x) => !x.streaming && /B says/.test(x.text)), 20_000);
    expect(slack.botMessages('C1', ev.ts)).toHaveLength(1);
    expect(m.text).toBe('B says question');
    expect(m.history.some((t) => t.includes('half1'))).toBe(true); // it was shown, then withdrawn
    expect(slack.callsOf('chat.update').filter((c) => c.args.ts === m.ts).length).toBeGreaterThanOrEqual(1);
  });

  it('posted and edited in a DM: the same message is edited', async () => {
    halfThenStall();
    const ev = slack.userMessage({ user: 'UALICE', channel: 'D1', text: 'another' });
    await postSigned(events, slack.eventBody(ev));
    const m = await eventually(async () => slack.botMessages('D1').find((x) => /B says/.test(x.text)), 20_000);
    await eventually(async () => (slack.messages.get(m.ts)!.text === 'B says another' ? true : undefined));
    expect(slack.botMessages('D1')).toHaveLength(1);
    expect(m.history.some((t) => t.includes('half1'))).toBe(true);
  });
});
