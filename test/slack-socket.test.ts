/**
 * The Slack channel over Socket Mode, end to end: the real bolt App and Slack
 * SDK against a fake Slack (Web API + socket mode websocket), a real gateway
 * (embedded) and the fake LLM. Asserts what a Slack user would see.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, type FakeRequest, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { APP_TOKEN, BOT, BOT_TOKEN, FakeSlack } from './fakes/slack-api.js';
import { eventually, readyz as operatorReadyz, startGateway, testConfig } from './support/gateway.js';

process.env.SB_TEST_SLACK_BOT = BOT_TOKEN;
process.env.SB_TEST_SLACK_APP = APP_TOKEN;

const OPERATOR = 'UOPERATOR';
/** A member of a partner workspace in a Slack Connect channel. */
const PARTNER = 'UPARTNER';
const PARTNER_TEAM = 'T0PARTNER';

/** The model: "run: <cmd>" asks for shell_exec; after a tool result it reports; else it answers with Markdown, slowly. */
function model(req: FakeRequest) {
  const msgs = req.body.messages as Array<{ role: string; content: unknown }>;
  const last = msgs[msgs.length - 1]!;
  if (last.role === 'tool') return reply(`tool said: ${String(last.content).replace(/\s+/g, ' ').slice(0, 200)}`);
  const text = lastUserText(req.body);
  const run = /run: (.+)$/.exec(text);
  if (run) return toolCall('shell_exec', { command: run[1] });
  const slow = /slow/.test(text);
  return reply(`Hello **there**, you said: ${text}. ${slow ? Array.from({ length: 30 }, (_, i) => `word${i}`).join(' ') : 'Bye.'}`, slow ? 80 : 15);
}

describe('slack over socket mode', () => {
  let llm: FakeLlm;
  let slack: FakeSlack;
  let gw: Gateway;

  const readyz = async () => (await (await operatorReadyz(gw.url!)).json()) as { checks: Record<string, { ok: boolean; message?: string }> };
  const slackHealthy = async () => (await readyz()).checks['channel:slack']?.ok === true;
  const event = (ev: any, opts: { retryAttempt?: number; envelopeId?: string; eventId?: string } = {}) =>
    slack.sendEnvelope('events_api', slack.eventBody(ev, opts.eventId), {
      ...(opts.retryAttempt ? { retryAttempt: opts.retryAttempt } : {}),
      ...(opts.envelopeId ? { envelopeId: opts.envelopeId } : {}),
    });
  const finalMessage = (channel: string, thread: string | undefined, re: RegExp) =>
    eventually(async () => slack.botMessages(channel, thread).find((m) => !m.streaming && re.test(m.text)), 20_000);

  beforeAll(async () => {
    llm = new FakeLlm();
    slack = new FakeSlack({ pingMs: 300 });
    await Promise.all([llm.start(), slack.start()]);
    llm.respond(model);
    slack.users.set('UALICE', { id: 'UALICE', name: 'alice', display_name: 'Alice A.' });
    slack.users.set(OPERATOR, { id: OPERATOR, name: 'olga', real_name: 'Olga Operator' });
    gw = await startGateway(
      testConfig(
        llm,
        {},
        {
          channels: {
            slack: {
              mode: 'socket',
              apiUrl: slack.apiUrl,
              botTokenEnv: 'SB_TEST_SLACK_BOT',
              appTokenEnv: 'SB_TEST_SLACK_APP',
              silenceMs: 1_500,
              streamIntervalMs: 100,
            },
          },
          access: { slack: { policy: 'open' } },
          approvals: { operators: { slack: [OPERATOR] }, timeoutMs: 60_000 },
        },
      ),
    );
    await eventually(slackHealthy, 15_000);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([llm?.close(), slack?.close()]);
  });

  it('answers a mention in a channel in its thread, streamed natively, once for the mention/message pair', async () => {
    const ev = slack.userMessage({ type: 'app_mention', user: 'UALICE', channel: 'C1', text: `<@${BOT.userId}> hello world, slowly` });
    const pair = { ...ev, type: 'message', channel_type: 'channel' };
    expect(await event(ev)).toEqual({});
    expect(await event(pair)).toEqual({});
    const m = await finalMessage('C1', ev.ts, /word29/);
    expect(m.text).toBe(`Hello **there**, you said: hello world, slowly. ${Array.from({ length: 30 }, (_, i) => `word${i}`).join(' ')}`);
    expect(slack.botMessages('C1')).toHaveLength(1);
    const start = slack.callsOf('chat.startStream');
    expect(start).toHaveLength(1);
    expect(start[0]!.args).toMatchObject({ channel: 'C1', thread_ts: ev.ts, recipient_user_id: 'UALICE', recipient_team_id: BOT.team });
    expect(slack.callsOf('chat.appendStream').filter((c) => c.args.ts === m.ts).length).toBeGreaterThanOrEqual(3);
    expect(slack.callsOf('chat.stopStream').filter((c) => c.args.ts === m.ts)).toHaveLength(1);
    expect(m.history.length).toBeGreaterThanOrEqual(4); // it grew while the model wrote
    expect(slack.callsOf('chat.postMessage').filter((c) => c.args.channel === 'C1')).toHaveLength(0);
    // The conversation is the thread; the sender's display name was resolved.
    const row = (
      await gw.infra.store.db.query<{ key: string; sender: { id: string; name?: string }; sender_identity: string }>(
        `select c.key, i.sender, i.sender_identity from inbox i join conversations c on c.id = i.conversation_id where i.external_id = $1`,
        [ev.client_msg_id],
      )
    ).rows;
    expect(row).toHaveLength(1);
    expect(row[0]!.key).toBe(`slack/${BOT.team}/C1/${ev.ts}`);
    // The sender is the user of the team (kernel/identity.ts).
    expect(row[0]!.sender).toEqual({ id: 'UALICE', workspace: BOT.team, name: 'Alice A.' });
    expect(row[0]!.sender_identity).toBe(`slack:${BOT.team}:UALICE`);

    // A reply in that thread without a mention is for the bot (it is in the thread) …
    const follow = slack.userMessage({ user: 'UALICE', channel: 'C1', text: 'and again', thread_ts: ev.ts });
    await event(follow);
    await finalMessage('C1', ev.ts, /you said: and again/);
    expect(slack.callsOf('users.info').filter((c) => c.args.user === 'UALICE')).toHaveLength(1); // cached
    // … a top-level message without a mention, and other bots' messages, are not.
    await event(slack.userMessage({ user: 'UALICE', channel: 'C1', text: 'just chatting' }));
    await event({
      ...slack.userMessage({ user: 'UOTHERBOT', channel: 'C1', text: `<@${BOT.userId}> ping`, thread_ts: ev.ts }),
      bot_id: 'BOTHER',
      subtype: 'bot_message',
    });
    await new Promise((r) => setTimeout(r, 700));
    expect(slack.botMessages('C1')).toHaveLength(2);
    expect(llm.requests.map((r) => lastUserText(r.body))).not.toContain('just chatting');
  });

  it('a shared channel (Slack Connect): a partner team member replying in the thread stays in its conversation, as themselves', async () => {
    const ev = slack.userMessage({ type: 'app_mention', user: 'UALICE', channel: 'C7', text: `<@${BOT.userId}> remember the word kumquat` });
    await event(ev);
    await finalMessage('C7', ev.ts, /kumquat/);
    // Bob of the partner workspace answers in the bot's thread, without a mention: the event's team is his.
    const reply = slack.userMessage({ user: PARTNER, team: PARTNER_TEAM, channel: 'C7', text: 'what was the word?', thread_ts: ev.ts });
    expect(slack.eventBody(reply)).toMatchObject({ team_id: BOT.team, is_ext_shared_channel: true, event: { team: PARTNER_TEAM, user_team: PARTNER_TEAM } });
    await event(reply);
    await finalMessage('C7', ev.ts, /what was the word/);
    const rows = (
      await gw.infra.store.db.query<{ key: string; sender_identity: string; external_id: string }>(
        `select c.key, i.sender_identity, i.external_id from inbox i join conversations c on c.id = i.conversation_id where i.external_id = any($1)`,
        [[ev.client_msg_id, reply.client_msg_id]],
      )
    ).rows;
    expect(new Set(rows.map((r) => r.key))).toEqual(new Set([`slack/${BOT.team}/C7/${ev.ts}`]));
    expect(rows.find((r) => r.external_id === reply.client_msg_id)!.sender_identity).toBe(`slack:${PARTNER_TEAM}:${PARTNER}`);
    // The model answering Bob saw Alice's turn: one conversation, one thread.
    const req = llm.requests.find((r) => lastUserText(r.body) === 'what was the word?')!;
    expect(JSON.stringify(req.body.messages)).toContain('kumquat');
    // The stream names Bob, of his team, as its recipient.
    expect(slack.callsOf('chat.startStream').at(-1)!.args).toMatchObject({ recipient_user_id: PARTNER, recipient_team_id: PARTNER_TEAM });
  });

  it("a shared-channel thread already keyed by the sender's team (before the change) keeps that conversation", async () => {
    const root = slack.userMessage({ type: 'app_mention', user: PARTNER, team: PARTNER_TEAM, channel: 'C8', text: `<@${BOT.userId}> hi` });
    const legacyKey = `slack/${PARTNER_TEAM}/C8/${root.ts}`;
    // What an older gateway stored for this thread: the conversation under the sender's team.
    await gw.infra.store.accept({
      channel: 'slack',
      externalId: 'legacy-root',
      conversationKey: legacyKey,
      sender: { id: PARTNER, workspace: PARTNER_TEAM },
      text: 'the password is papaya',
      attachments: [],
      receivedAt: new Date(),
    });
    const next = slack.userMessage({ user: PARTNER, team: PARTNER_TEAM, channel: 'C8', text: `<@${BOT.userId}> what is the password?`, thread_ts: root.ts });
    await event(next);
    await finalMessage('C8', root.ts, /what is the password/);
    const key = (
      await gw.infra.store.db.query<{ key: string }>(`select c.key from inbox i join conversations c on c.id = i.conversation_id where i.external_id = $1`, [
        next.client_msg_id,
      ])
    ).rows[0]!.key;
    expect(key).toBe(legacyKey);
  });

  it('does not answer Slackbot (USLACKBOT) or system messages', async () => {
    await event(slack.userMessage({ user: 'USLACKBOT', channel: 'D6', text: 'Reminder: stand-up' }));
    await event({ ...slack.userMessage({ user: 'UALICE', channel: 'D6', text: 'archived the channel' }), subtype: 'channel_archive' });
    await event(slack.userMessage({ user: 'UALICE', channel: 'D6', text: 'a real question' }));
    await finalMessage('D6', undefined, /a real question/);
    await new Promise((r) => setTimeout(r, 500));
    expect(slack.botMessages('D6')).toHaveLength(1);
    expect(llm.requests.map((r) => lastUserText(r.body))).not.toContain('Reminder: stand-up');
  });

  it('answers a DM at top level by posting and editing (≤ 1 edit/s), Markdown as mrkdwn, files as metadata', async () => {
    const ev = slack.userMessage({
      user: 'UALICE',
      channel: 'D1',
      text: 'slow please',
      files: [{ id: 'F1', name: 'report.pdf', mimetype: 'application/pdf', size: 1234, url_private: 'https://files.slack.com/report.pdf' }],
    });
    await event(ev);
    const m = await finalMessage('D1', undefined, /word29/);
    expect(m.thread_ts).toBeUndefined();
    expect(m.text).toMatch(/^Hello \*there\*, you said: slow please/);
    expect(slack.callsOf('chat.startStream').filter((c) => c.args.channel === 'D1')).toHaveLength(0);
    const updates = slack.callsOf('chat.update').filter((c) => c.args.ts === m.ts);
    expect(updates.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < updates.length; i++) expect(updates[i]!.at - updates[i - 1]!.at).toBeGreaterThanOrEqual(950);
    const row = (await gw.infra.store.db.query<{ attachments: unknown[] }>(`select attachments from inbox where external_id = $1`, [ev.client_msg_id]))
      .rows[0]!;
    expect(row.attachments).toEqual([{ name: 'report.pdf', contentType: 'application/pdf', size: 1234, url: 'https://files.slack.com/report.pdf' }]);
    const req = llm.requests.find((r) => lastUserText(r.body).startsWith('slow please'))!;
    expect(lastUserText(req.body)).toContain('report.pdf');
  });

  it('acknowledges a redelivered envelope and answers it once', async () => {
    const ev = slack.userMessage({ user: 'UALICE', channel: 'D3', text: 'only once' });
    const body = slack.eventBody(ev, 'EvRETRY1');
    await slack.sendEnvelope('events_api', body);
    await slack.sendEnvelope('events_api', body, { retryAttempt: 1 });
    await finalMessage('D3', undefined, /only once/);
    await new Promise((r) => setTimeout(r, 500));
    expect(slack.botMessages('D3')).toHaveLength(1);
    expect(llm.requests.filter((r) => lastUserText(r.body) === 'only once')).toHaveLength(1);
  });

  it('approvals: buttons, a non-operator refused privately, an operator decides, the message says who and when', async () => {
    const ev = slack.userMessage({ user: 'UALICE', channel: 'D2', text: 'run: echo hi >> out.txt' });
    await event(ev);
    const request = await eventually(async () => slack.botMessages('D2').find((m) => m.blocks?.some((b) => b.type === 'actions')), 20_000);
    const actions = request.blocks!.find((b) => b.type === 'actions')!;
    // A redirected command cannot become an exact rule: no Always button (issue #18).
    expect(actions.elements.map((e: any) => e.action_id)).toEqual(['sb_approve', 'sb_deny']);
    const code = actions.elements[0].value as string;
    expect(code).toMatch(/^[A-Z0-9]{5}$/);
    expect(request.text).toContain(code);
    // The text form of the request is not repeated in the streamed reply.
    expect(slack.botMessages('D2').filter((m) => /Reply YES/.test(m.text))).toHaveLength(0);

    // Alice (who asked, not an operator) clicks Approve: refused, only she sees it.
    await slack.sendEnvelope('interactive', slack.blockAction({ user: 'UALICE', message: request, actionId: 'sb_approve', value: code }));
    const refusal = await eventually(async () => slack.ephemerals.find((e) => e.user === 'UALICE' && e.text.includes(code)));
    expect(refusal.text).toMatch(/Only an operator/);
    expect((await gw.infra.approvals.byCode(code))!.status).toBe('pending');
    expect(slack.messages.get(request.ts)!.blocks!.some((b) => b.type === 'actions')).toBe(true);

    // The operator approves: the request shows who decided, the turn resumes and reports.
    await slack.sendEnvelope(
      'interactive',
      slack.blockAction({ user: OPERATOR, message: slack.messages.get(request.ts)!, actionId: 'sb_approve', value: code }),
    );
    const decided = await eventually(async () => {
      const msg = slack.messages.get(request.ts)!;
      return msg.blocks?.some((b) => b.type === 'actions') ? undefined : msg;
    });
    const note = JSON.stringify(decided.blocks);
    expect(note).toContain('Approved');
    expect(note).toContain(`<@${OPERATOR}>`);
    expect(note).toMatch(/<!date\^\d+\^/);
    const done = await finalMessage('D2', undefined, /tool said/);
    expect(done.text).toContain('exit code 0');
    expect(Number(done.ts)).toBeGreaterThan(Number(request.ts));
    // A late click is told what happened.
    await slack.sendEnvelope('interactive', slack.blockAction({ user: OPERATOR, message: request, actionId: 'sb_deny', value: code }));
    await eventually(async () => slack.ephemerals.find((e) => e.user === OPERATOR && /already approved/.test(e.text)));
  });

  it('approvals: "approve CODE" typed by the operator works too', async () => {
    const ev = slack.userMessage({ user: 'UALICE', channel: 'D4', text: 'run: echo typed >> typed.txt' });
    await event(ev);
    const request = await eventually(async () => slack.botMessages('D4').find((m) => m.blocks?.some((b) => b.type === 'actions')), 20_000);
    const code = request.blocks!.find((b) => b.type === 'actions')!.elements[0].value as string;
    await event(slack.userMessage({ user: OPERATOR, channel: 'D4', text: `approve ${code}` }));
    await finalMessage('D4', undefined, new RegExp(`${code} approved by ${OPERATOR}`));
    await finalMessage('D4', undefined, /tool said/);
  });

  it('a socket that goes silent is noticed in /readyz and reconnected', async () => {
    const before = slack.connections;
    slack.silence();
    const down = await eventually(
      async () => {
        const c = (await readyz()).checks['channel:slack']!;
        return c.ok ? undefined : c;
      },
      10_000,
      100,
    );
    expect(down.message).toMatch(/socket mode/);
    await eventually(slackHealthy, 15_000, 100);
    expect(slack.connections).toBeGreaterThan(before);
    // And it hears again.
    await event(slack.userMessage({ user: 'UALICE', channel: 'D5', text: 'still there?' }));
    await finalMessage('D5', undefined, /still there/);
  });
});
