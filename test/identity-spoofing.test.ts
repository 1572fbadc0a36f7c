/**
 * Identities are tied to their channel (issue #19), through the real gateway
 * on both backends: a Slack user (the Slack fake, Socket Mode) keeps a private
 * conversation and a memory note; a webhook caller, an SMS sender (the Twilio
 * fake) and an HTTP key holder who name that user's id run
 * `conversation_search` and `memory_recall` through the model and read nothing
 * of hers, while she still reads her own. A Slack operator is nobody on SMS,
 * and a requester's approval answer counts only from her own whole identity
 * (channel and Slack team).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../app/gateway.js';
import { signedHeaders } from '../kernel/hmac-signature.js';
import { createLogger } from '../src/log.js';
import { FakeLlm, type FakeRequest, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { APP_TOKEN, BOT, BOT_TOKEN, FakeSlack } from './fakes/slack-api.js';
import { FakeTwilio } from './fakes/sms-twilio.js';
import { backendSetups } from './support/backends.js';
import { API_KEY, eventually, openaiClient, testConfig } from './support/gateway.js';

process.env.SB_TEST_SLACK_BOT = BOT_TOKEN;
process.env.SB_TEST_SLACK_APP = APP_TOKEN;
process.env.SB_SPOOF_HOOK_SECRET = 'spoof-hook-secret-0123456789';

const ALICE = 'UALICE';
const OPERATOR = 'UOPERATOR';
const TWILIO_NUMBER = '+15550100000';
const PUBLIC = 'https://sms.example.test/hooks';
const SECRET_WORD = 'zebracorn';
const NOTE = `User's project is codenamed ${SECRET_WORD}`;

type Msg = { role: string; content: unknown };
const text = (c: unknown): string =>
  typeof c === 'string' ? c : Array.isArray(c) ? c.map((p: { text?: string }) => (typeof p === 'string' ? p : (p.text ?? ''))).join('\n') : '';

/** The fake model: "search: Q" → conversation_search, "recall" → memory_recall, "remember sender: NOTE", "run: CMD"; after a tool it repeats what the tool said. */
function model(req: FakeRequest) {
  const msgs = req.body.messages as Msg[];
  const last = msgs[msgs.length - 1]!;
  if (last.role === 'tool') return reply(`tool said: ${text(last.content)}`);
  const t = lastUserText(req.body);
  const search = /search: (\S+)/.exec(t);
  if (search) return toolCall('conversation_search', { query: search[1] });
  if (/\brecall\b/.test(t)) return toolCall('memory_recall', { query: '' });
  const rem = /remember sender: (.+)$/s.exec(t);
  if (rem) return toolCall('memory_remember', { note: rem[1], scope: 'sender' });
  const run = /run: (.+)$/.exec(t);
  if (run) return toolCall('shell_exec', { command: run[1] });
  return reply(`ok: ${t}`);
}

const setups = backendSetups();

describe.each(setups)('identities are tied to their channel: $name', (setup) => {
  let llm: FakeLlm;
  let slack: FakeSlack;
  let tw: FakeTwilio;
  let gw: Gateway;
  let aliceConversation: string;

  beforeAll(async () => {
    llm = new FakeLlm();
    slack = new FakeSlack({ pingMs: 300 });
    tw = new FakeTwilio(PUBLIC);
    await Promise.all([llm.start(), slack.start(), tw.start()]);
    llm.respond(model);
    slack.users.set(ALICE, { id: ALICE, name: 'alice', display_name: 'Alice A.' });
    slack.users.set(OPERATOR, { id: OPERATOR, name: 'olga', real_name: 'Olga Operator' });
    const cfg = testConfig(llm, await setup.backend(), {
      channels: {
        slack: {
          mode: 'socket',
          apiUrl: slack.apiUrl,
          botTokenEnv: 'SB_TEST_SLACK_BOT',
          appTokenEnv: 'SB_TEST_SLACK_APP',
          silenceMs: 1_500,
          streamIntervalMs: 100,
        },
        sms: {
          accountSid: tw.accountSid,
          authTokenEnv: 'SB_TEST_TWILIO_TOKEN',
          publicUrl: PUBLIC,
          apiBaseUrl: tw.url,
          sendAttempts: 2,
          retryBaseMs: 20,
          retryMaxMs: 50,
        },
        // "slack" is a hook named like the channel: its senders are still the hook's.
        webhook: {
          hooks: [
            { name: 'crm', secretEnv: 'SB_SPOOF_HOOK_SECRET' },
            { name: 'slack', secretEnv: 'SB_SPOOF_HOOK_SECRET' },
          ],
        },
      },
      access: { slack: { policy: 'open' }, sms: { policy: 'open' } },
      approvals: { operators: { slack: [OPERATOR] }, requesterMay: ['caution'], timeoutMs: 60_000 },
    });
    gw = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger(cfg.log.level), { ...process.env, SB_TEST_TWILIO_TOKEN: tw.authToken });
    tw.gatewayUrl = gw.url!;
    await eventually(async () => gw.channels.find((c) => c.name === 'slack')!.listener!.health().ok, 15_000);
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([llm?.close(), slack?.close(), tw?.close()]);
    await setup.cleanup();
  });

  const store = () => gw.infra.store;
  /** The reply of the turn that answered this inbox row (what the caller would be sent). */
  const replyOf = async (channel: string, externalId: string): Promise<string> => {
    const row = await eventually(async () => {
      const r = (
        await store().db.query<{ turn_id: string | null; consumed_at: Date | null; conversation_id: string }>(
          'select turn_id, consumed_at, conversation_id from inbox where channel = $1 and external_id = $2',
          [channel, externalId],
        )
      ).rows[0];
      return r?.consumed_at && r.turn_id ? r : undefined;
    }, 20_000);
    return store().turnReply(row.turn_id!);
  };
  const slackSays = async (user: string, channel: string, t: string): Promise<{ externalId: string; conversationId: () => Promise<string> }> => {
    const ev = slack.userMessage({ user, channel, text: t });
    await slack.sendEnvelope('events_api', slack.eventBody(ev));
    const externalId = ev.client_msg_id as string;
    return {
      externalId,
      conversationId: async () =>
        (
          await eventually(
            async () =>
              (
                await store().db.query<{ conversation_id: string }>('select conversation_id from inbox where channel = $1 and external_id = $2', [
                  'slack',
                  externalId,
                ])
              ).rows[0],
          )
        ).conversation_id,
    };
  };
  const aliceSays = async (t: string) => replyOf('slack', (await slackSays(ALICE, 'D1', t)).externalId);
  const hookSays = async (hook: string, sender: string, t: string) => {
    const key = randomUUID();
    const raw = JSON.stringify({ text: t, sender, conversation: `spoof-${sender}`, idempotencyKey: key });
    const r = await fetch(`${gw.url}/v1/webhooks/${hook}`, { method: 'POST', headers: signedHeaders(process.env.SB_SPOOF_HOOK_SECRET!, raw), body: raw });
    expect(r.status).toBe(202);
    return replyOf('webhook', `${hook}:${key}`);
  };
  /** An SMS; returns the direct (TwiML) answer and, for a message that became a turn, its reply. */
  const smsSays = async (from: string, t: string, opts: { turn?: boolean } = {}) => {
    const sid = `SM${randomUUID().replace(/-/g, '')}`;
    const r = await tw.webhook('/v1/channels/sms/inbound', tw.inboundParams({ from, to: TWILIO_NUMBER, body: t, sid }));
    expect(r.status).toBe(200);
    return { twiml: r.body, reply: opts.turn === false ? '' : await replyOf('sms', sid) };
  };
  /** Conversation ids a conversation_search answer names. */
  const conversationsIn = (found: string) => [...found.matchAll(/\bc_[0-9a-f-]{36}\b/g)].map((m) => m[0]);
  /** What a spoofer's search may show: nothing of hers (their own earlier searches are theirs). */
  const expectNothingOfHers = (found: string) => {
    expect(found).toMatch(/conversation_search/);
    expect(conversationsIn(found)).not.toContain(aliceConversation);
    expect(found).not.toContain('codenamed');
  };
  const httpSays = async (t: string, name: string) => {
    const r = await openaiClient(gw.url!, API_KEY, { 'x-switchboard-conversation': name }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: t }],
      user: name,
    });
    return r.choices[0]!.message.content ?? '';
  };

  it('a Slack user keeps a private conversation and a note about herself, and reads both', async () => {
    const said = await slackSays(ALICE, 'D1', `My project is codenamed ${SECRET_WORD}. remember sender: ${NOTE}`);
    expect(await replyOf('slack', said.externalId)).toMatch(/remembered \(#\d+, sender\)/);
    aliceConversation = await said.conversationId();
    const notes = await store().listMemory('sender');
    expect(notes.find((n) => n.body === NOTE)?.scopeKey).toBe(`slack:${BOT.team}:${ALICE}`);
    const rows = (await store().db.query<{ sender_identity: string }>('select sender_identity from inbox where external_id = $1', [said.externalId])).rows;
    expect(rows[0]!.sender_identity).toBe(`slack:${BOT.team}:${ALICE}`);
    const found = await aliceSays(`search: ${SECRET_WORD}`);
    expect(found).toContain(aliceConversation);
    expect(found).toContain(`codenamed ${SECRET_WORD}`);
    expect(await aliceSays('recall')).toContain(NOTE);
  });

  it('a webhook caller naming her id reads none of her conversations or notes', async () => {
    for (const [hook, sender] of [
      ['crm', ALICE],
      ['crm', `slack:${BOT.team}:${ALICE}`],
      // A hook named like the channel, naming her team and id, is still that hook's sender.
      ['slack', `${BOT.team}:${ALICE}`],
    ] as const) {
      expectNothingOfHers(await hookSays(hook, sender, `search: ${SECRET_WORD}`));
      const recalled = await hookSays(hook, sender, 'recall');
      expect(recalled).toContain('no notes found');
      expect(recalled).not.toContain(SECRET_WORD);
    }
  });

  it('an SMS sender whose From is her id reads none of them either', async () => {
    const found = await smsSays(ALICE, `search: ${SECRET_WORD}`);
    expect(found.reply).toContain('nothing found'); // its first search: it has written nowhere else
    expectNothingOfHers(found.reply);
    const recalled = await smsSays(ALICE, 'recall');
    expect(recalled.reply).toContain('no notes found');
    expect(recalled.reply).not.toContain(SECRET_WORD);
  });

  it('an HTTP key holder naming her id as the conversation and user reads none of them', async () => {
    for (const name of [ALICE, `slack:${BOT.team}:${ALICE}`.replace(/:/g, '-')]) {
      expectNothingOfHers(await httpSays(`search: ${SECRET_WORD}`, name));
      const recalled = await httpSays('recall', name);
      expect(recalled).toContain('no notes found');
      expect(recalled).not.toContain(SECRET_WORD);
    }
  });

  it('she still reads her own, and only her own', async () => {
    const found = await aliceSays(`search: ${SECRET_WORD}`);
    expect(found).toContain(aliceConversation);
    // The spoofers' own searches are theirs: not in hers.
    const others = (await store().db.query<{ conversation_id: string }>(`select distinct conversation_id from inbox where channel <> 'slack'`)).rows.map(
      (r) => r.conversation_id,
    );
    expect(others.length).toBeGreaterThan(0);
    for (const c of others) expect(found).not.toContain(c);
    expect(await aliceSays('recall')).toContain(NOTE);
  });

  it("an approval answer counts only from the requester's whole identity; a Slack operator is nobody on SMS", async () => {
    const ask = async (file: string) => {
      await slackSays(ALICE, 'D5', `run: touch ${file}`);
      const request = await eventually(
        async () => slack.botMessages('D5').find((m) => JSON.stringify(m.blocks ?? []).includes(file) && m.blocks!.some((b) => b.type === 'actions')),
        20_000,
      );
      const code = request.blocks!.find((b) => b.type === 'actions')!.elements[0].value as string;
      return { request, code };
    };
    const { request, code } = await ask('mine.txt');
    const approval = (await gw.infra.approvals.byCode(code))!;
    expect(approval.requester).toBe(`slack:${BOT.team}:${ALICE}`);

    // Her id on SMS, and the Slack operator's id on SMS: neither may answer.
    for (const from of [ALICE, OPERATOR]) {
      const r = await smsSays(from, `YES ${code}`, { turn: false });
      expect(r.twiml).not.toMatch(/approved/i);
      expect((await gw.infra.approvals.byCode(code))!.status).toBe('pending');
    }
    // Her user id clicking from another Slack team is not her.
    const click = slack.blockAction({ user: ALICE, message: request, actionId: 'sb_approve', value: code });
    await slack.sendEnvelope('interactive', { ...click, user: { id: ALICE, username: ALICE, team_id: 'TOTHER' }, team: { id: 'TOTHER', domain: 'other' } });
    await eventually(async () => slack.ephemerals.find((e) => e.user === ALICE && e.text.includes(code)));
    expect((await gw.infra.approvals.byCode(code))!.status).toBe('pending');
    const refusals = (
      await store().db.query<{ actor: string }>(
        `select actor from audit where subject = $1 and action in ('approval.refused', 'approval.code_refused') order by id`,
        [code],
      )
    ).rows.map((r) => r.actor);
    expect(refusals).toEqual([`sms:${ALICE}`, `sms:${OPERATOR}`, `slack:TOTHER:${ALICE}`]);

    // She, as herself, may (requesterMay: caution); the turn resumes.
    await slackSays(ALICE, 'D5', `yes ${code}`);
    await eventually(async () => slack.botMessages('D5').find((m) => m.text.includes(`${code} approved by ${ALICE}`)), 20_000);
    expect((await gw.infra.approvals.byCode(code))!.decidedBy).toBe(`slack:${BOT.team}:${ALICE}`);

    // The operator, on Slack, is an operator.
    const second = await ask('second.txt');
    await slackSays(OPERATOR, 'D5', `approve ${second.code}`);
    await eventually(async () => slack.botMessages('D5').find((m) => m.text.includes(`${second.code} approved by ${OPERATOR}`)), 20_000);
    expect((await gw.infra.approvals.byCode(second.code))!.decidedBy).toBe(`slack:${BOT.team}:${OPERATOR}`);
  });
});
