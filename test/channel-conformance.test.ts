/**
 * One turn-event script, every deliverer, against the platform fakes: what a
 * user sees on each platform. The script says something, withdraws it (a
 * provider fell over), says something else, runs a tool that parks for an
 * approval, gets a notice, and ends parked. Everywhere: the final text, the
 * withdrawn text gone, the request shown once and natively (buttons on Slack
 * and Discord, codes on SMS, e-mail and the webhook, a card plus its text over
 * SSE), and the parked call "waiting for approval (code …)", never "failed".
 *
 * Run twice: with tool_end `pending` (the contract) and without it (a failed
 * tool_end that the approval request follows), as the turn sends it today.
 */
import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryRecord, DeliveryStore } from '../adapters/store/deliveries.js';
import { parseDiscordConfig } from '../channels/discord/config.js';
import { DiscordDeliverer } from '../channels/discord/deliver.js';
import { parseEmailConfig } from '../channels/email/config.js';
import { EmailDeliverer } from '../channels/email/deliver.js';
import { ChunkWriter, SseReply } from '../channels/http/sse.js';
import { parseSlackConfig } from '../channels/slack/config.js';
import { SlackDeliverer } from '../channels/slack/deliver.js';
import { twilioSender } from '../channels/sms/client.js';
import { parseSmsConfig } from '../channels/sms/config.js';
import { SmsDeliverer } from '../channels/sms/deliver.js';
import { SmsStore } from '../channels/sms/store.js';
import { parseTelegramConfig } from '../channels/telegram/config.js';
import { TelegramDeliverer } from '../channels/telegram/deliver.js';
import { WebhookDeliverer } from '../channels/webhook/deliver.js';
import type { ApprovalInfo, TurnEvent } from '../kernel/turn-events.js';
import type { ChannelDeliverer, DeliverContext, TurnTarget } from '../src/channel/index.js';
import { FakeDiscord } from './fakes/discord-server.js';
import { SmtpSink } from './fakes/email-smtp.js';
import { BOT, BOT_TOKEN, FakeSlack } from './fakes/slack-api.js';
import { FakeTwilio } from './fakes/sms-twilio.js';
import { FakeTelegram, BOT_TOKEN as TELEGRAM_TOKEN } from './fakes/telegram-server.js';

type Ev = TurnEvent extends infer E ? (E extends TurnEvent ? Omit<E, 'turnId'> : never) : never;

const CODE = 'K7Q4P';
const WITHDRAWN = 'This draft gets withdrawn';
const ANSWER = 'Let me append that line.';
const NOTICE = 'answered by the fallback model';
const approval: ApprovalInfo = {
  code: CODE,
  tool: 'shell_exec',
  tier: 'caution',
  expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
  args: { command: 'echo hi >> notes.txt' },
  reasons: [],
};
const usage = { input: 10, output: 5, totalTokens: 15, cost: 0 };

/** The turn up to its flush (the deliverer is closed after it), then `done`. */
function script(form: 'pending' | 'legacy'): { before: Ev[]; done: Ev } {
  return {
    before: [
      { type: 'turn_start', conversationId: 'c1', inboxIds: [1], attempt: 1 },
      { type: 'text_delta', delta: WITHDRAWN },
      { type: 'reset', reason: 'provider error' },
      { type: 'text_delta', delta: ANSWER },
      { type: 'tool_start', toolCallId: 'call1', name: 'shell_exec', args: approval.args },
      form === 'pending'
        ? { type: 'tool_end', toolCallId: 'call1', name: 'shell_exec', isError: false, pending: { code: CODE } }
        : { type: 'tool_end', toolCallId: 'call1', name: 'shell_exec', isError: true },
      { type: 'approval_requested', approval },
      { type: 'notice', text: NOTICE },
    ],
    done: { type: 'done', text: ANSWER, finishReason: 'approval_pending', usage, approvals: [approval] },
  };
}

class MemoryDeliveries {
  rows: DeliveryRecord[] = [];
  async get(turnId: string, channel: string, target: string) {
    return this.rows.find((r) => r.turnId === turnId && r.channel === channel && r.target === target);
  }
  async forTurn(turnId: string) {
    return this.rows.filter((r) => r.turnId === turnId);
  }
  async record(turnId: string, channel: string, target: string, f: { platformMessageId?: string | null; state: string; body?: string | null }) {
    let r = await this.get(turnId, channel, target);
    if (!r)
      this.rows.push(
        (r = { id: this.rows.length + 1, turnId: turnId, channel, target, platformMessageId: null, state: f.state, body: null, updatedAt: new Date() }),
      );
    r.platformMessageId = f.platformMessageId ?? r.platformMessageId;
    r.state = f.state;
    r.body = f.body ?? r.body;
    return r;
  }
}

const log = pino({ level: 'silent' });
const ctx = (): DeliverContext => ({ deliveries: new MemoryDeliveries() as unknown as DeliveryStore, state: {} as never, log });
const count = (s: string, what: string) => s.split(what).length - 1;

function target(turnId: string, channel: string, replyTo: Record<string, unknown>, sender = 'U1'): TurnTarget {
  return {
    turnId,
    attempt: 1,
    conversation: { id: 'c1', key: `${channel}/x`, channel, agent: 'default' },
    // As the worker's bindDeliverer gives it: the stored reply target, parsed by the channel.
    replyTo,
    sender: { id: sender },
  };
}

async function drive(d: ChannelDeliverer, t: TurnTarget, form: 'pending' | 'legacy'): Promise<void> {
  const { before, done } = script(form);
  const del = d.open(t, ctx());
  for (const e of before) del.event({ ...e, turnId: t.turnId } as TurnEvent);
  await del.close();
  del.event({ ...done, turnId: t.turnId } as TurnEvent);
}

describe.each(['pending', 'legacy'] as const)('every deliverer shows the same turn (tool_end %s)', (form) => {
  let slack: FakeSlack;
  let discord: FakeDiscord;
  let twilio: FakeTwilio;
  let telegram: FakeTelegram;
  let smtp: SmtpSink;
  let hookServer: Server;
  const callbacks: Array<Record<string, unknown>> = [];
  let n = 0;
  const id = (p: string) => `${p}-${form}-${++n}`;

  beforeAll(async () => {
    slack = new FakeSlack();
    discord = new FakeDiscord();
    twilio = new FakeTwilio('https://sms.example.test');
    twilio.statusCallbacks = false;
    smtp = new SmtpSink();
    telegram = new FakeTelegram();
    hookServer = createServer(async (req: IncomingMessage, res) => {
      let body = '';
      for await (const c of req) body += c;
      callbacks.push(JSON.parse(body) as Record<string, unknown>);
      res.writeHead(200).end();
    });
    await Promise.all([
      slack.start(),
      discord.start(),
      twilio.start(),
      smtp.start(),
      telegram.start(),
      new Promise<void>((r) => hookServer.listen(0, '127.0.0.1', r)),
    ]);
  });
  afterAll(async () => {
    await Promise.all([slack?.close(), discord?.close(), twilio?.close(), smtp?.close(), telegram?.close(), new Promise((r) => hookServer?.close(r))]);
  });

  it('slack (post and edit): the answer, the request with buttons, the call waiting', async () => {
    const ch = `D${form}${++n}`;
    const d = new SlackDeliverer(parseSlackConfig({ apiUrl: slack.apiUrl, updateIntervalMs: 200 }, { SLACK_BOT_TOKEN: BOT_TOKEN }));
    await drive(d, target(id('slack'), 'slack', { channel: ch, ts: '1.1', team: BOT.team, user: 'UALICE', dm: true }), form);
    const msgs = slack.botMessages(ch);
    expect(msgs).toHaveLength(2);
    const [reply, ask] = msgs as [(typeof msgs)[0], (typeof msgs)[0]];
    expect(reply.text).toContain(ANSWER);
    expect(reply.text).toContain(`_${NOTICE}_`);
    expect(reply.text).toContain(`waiting for approval (code ${CODE})`);
    expect(msgs.flatMap((m) => m.history).join('\n')).not.toMatch(/failed/i);
    expect(reply.text).not.toContain(WITHDRAWN);
    expect(reply.text).not.toContain('Approval needed');
    const buttons = JSON.stringify(ask.blocks);
    expect(buttons).toContain('sb_approve');
    expect(buttons).toContain(`"value":"${CODE}"`);
    expect(count(ask.text, 'Approval needed')).toBe(1);
  });

  it('slack (native streaming in a thread): the parked call is a pending task, never an error', async () => {
    const ch = `C${form}${++n}`;
    const thread = `${n}.000100`;
    const d = new SlackDeliverer(parseSlackConfig({ apiUrl: slack.apiUrl, updateIntervalMs: 200, streamIntervalMs: 50 }, { SLACK_BOT_TOKEN: BOT_TOKEN }));
    await drive(d, target(id('slackn'), 'slack', { channel: ch, thread_ts: thread, ts: thread, team: BOT.team, user: 'UALICE', dm: false }), form);
    const msgs = slack.botMessages(ch, thread);
    const reply = msgs.find((m) => !m.blocks)!;
    expect(reply.text).toContain(ANSWER);
    expect(reply.text).not.toContain(WITHDRAWN);
    const tasks = msgs.flatMap((m) => m.tasks).filter((t) => t.id === 'call1');
    expect(tasks.at(-1)).toMatchObject({ status: 'pending', title: `shell_exec waiting for approval (code ${CODE})` });
    expect(tasks.some((t) => t.status === 'error' || /failed/i.test(t.title))).toBe(false);
    expect(msgs.filter((m) => JSON.stringify(m.blocks ?? []).includes('sb_approve'))).toHaveLength(1);
  });

  it('discord: the answer and the request in the reply, buttons on its last message', async () => {
    const ch = String(710000000000000000n + BigInt(++n));
    discord.addGuild(String(720000000000000000n + BigInt(n)), 'g', [{ id: ch, name: 'general' }]);
    const asked = discord.userMessage({ channelId: ch, author: { id: '600000000000000001', username: 'alice' }, content: 'append it' });
    const d = new DiscordDeliverer(
      parseDiscordConfig({ apiBaseUrl: discord.apiUrl, editIntervalMs: 200, typing: false }, { DISCORD_BOT_TOKEN: 'fake-bot-token' }),
    );
    await drive(d, target(id('discord'), 'discord', { channelId: ch, messageId: asked, guildId: null }), form);
    await d.close();
    const msgs = discord.botMessages(ch);
    const all = msgs.map((m) => m.content).join('\n');
    expect(all).toContain(ANSWER);
    expect(all).toContain(`*${NOTICE}*`);
    expect(all).not.toContain(WITHDRAWN);
    expect(count(all, 'Approval needed')).toBe(1);
    expect(all).toContain(`waiting for approval (code ${CODE})`);
    expect(all).not.toMatch(/failed/i);
    expect(JSON.stringify(msgs.at(-1)!.components)).toContain(`sb-approval:approve:${CODE}`);
    expect(msgs[0]!.message_reference?.message_id).toBe(asked);
  });

  it('telegram: the answer and the request in the reply, the inline keyboard on its last message', async () => {
    const chat = telegram.addChat({ id: 2000 + ++n, type: 'private' });
    const asked = telegram.userMessage({ chat, from: { id: chat.id, first_name: 'Alice' }, text: 'append it' });
    const d = new TelegramDeliverer(parseTelegramConfig({ apiRoot: telegram.apiRoot, typing: false }, { TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN }));
    await drive(d, target(id('telegram'), 'telegram', { chatId: String(chat.id), messageId: asked.messageId }), form);
    const msgs = telegram.botMessages(chat.id);
    const all = msgs.map((m) => m.text).join('\n');
    expect(all).toContain(ANSWER);
    expect(all).toContain(NOTICE);
    expect(msgs.map((m) => m.history.at(-1)!.raw).join('\n')).toContain(`<i>${NOTICE}</i>`);
    expect(all).not.toContain(WITHDRAWN);
    expect(count(all, 'Approval needed')).toBe(1);
    expect(all).toContain(`waiting for approval (code ${CODE})`);
    expect(all).not.toMatch(/failed/i);
    expect(JSON.stringify(msgs.at(-1)!.replyMarkup)).toContain(`sb:approve:${CODE}`);
    expect(msgs[0]!.replyToMessageId).toBe(asked.messageId);
  });

  it('sms: the answer with the codes to reply with; the notice on its own', async () => {
    const to = `+1555${String(1000000 + ++n).slice(-7)}`;
    const cfg = parseSmsConfig(
      { accountSid: twilio.accountSid, publicUrl: 'https://sms.example.test', apiBaseUrl: twilio.url, statusCallbacks: false },
      { TWILIO_AUTH_TOKEN: twilio.authToken },
    );
    const store = new SmsStore();
    const d = new SmsDeliverer(cfg, store, () => twilioSender(cfg));
    await d.start(ctx());
    await drive(d, target(id('sms'), 'sms', { to, from: '+15550009999' }, to), form);
    const bodies = twilio.sentTo(to).map((m) => m.body);
    expect(bodies).toHaveLength(2);
    expect(bodies[0]).toBe(NOTICE);
    const answer = bodies[1]!;
    expect(answer.startsWith(ANSWER)).toBe(true);
    expect(answer).toContain(`Reply YES ${CODE} to approve or NO ${CODE} to refuse`);
    expect(count(answer, 'Approval needed')).toBe(1);
    expect(bodies.join('\n')).not.toContain(WITHDRAWN);
    expect(bodies.join('\n')).not.toMatch(/failed/i);
  });

  it('email: one mail with the answer, the request and its codes, the notice', async () => {
    const cfg = parseEmailConfig(
      {
        address: 'bot@example.test',
        imap: { host: 'unused', user: 'bot' },
        smtp: { host: '127.0.0.1', port: smtp.port, auth: false, retry: { attempts: 2, minMs: 20, maxMs: 50 } },
      },
      { EMAIL_IMAP_PASSWORD: 'x' },
    );
    const d = new EmailDeliverer(cfg);
    await d.start(ctx());
    const turn = id('email');
    await drive(d, target(turn, 'email', { to: 'ann@example.com', subject: 'Notes', messageId: `<q-${turn}@example.com>`, references: [] }), form);
    await d.close();
    const mails = smtp.mails.filter((m) => m.inReplyTo === `<q-${turn}@example.com>`);
    expect(mails).toHaveLength(1);
    const text = mails[0]!.text;
    expect(text.trim().startsWith(ANSWER)).toBe(true);
    expect(text).toContain(`Reply YES ${CODE} to approve`);
    expect(text).toContain(`_${NOTICE}_`);
    expect(count(text, 'Approval needed')).toBe(1);
    expect(text).not.toContain(WITHDRAWN);
  });

  it('webhook: the text with the request once, its code in approvals, finishReason approval_pending', async () => {
    const hook = {
      name: 'crm',
      secretEnv: 'X',
      callbackUrl: `http://127.0.0.1:${(hookServer.address() as AddressInfo).port}/cb`,
      allowRequestCallback: false,
      allowCallbackCidrs: ['127.0.0.0/8'],
      agent: 'default',
    };
    const d = new WebhookDeliverer({ hooks: [hook], replayWindowSeconds: 300, callbackAttempts: 2, callbackBackoffMs: 20 }, new Map([['crm', 'secret']]));
    const turn = id('hook');
    const before = callbacks.length;
    await drive(d, target(turn, 'webhook', { hook: 'crm' }), form);
    const got = callbacks.slice(before);
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ turn, finishReason: 'approval_pending', approvals: [`approval:${CODE}`] });
    const text = String(got[0]!.text);
    expect(text.startsWith(ANSWER)).toBe(true);
    expect(count(text, 'Approval needed')).toBe(1);
    expect(text).toContain(`YES ${CODE}`);
    expect(text).not.toContain(WITHDRAWN);
  });

  it('SSE (the OpenAI API streamed): the reset marked, the call waiting, the card with its text fallback', async () => {
    const res = new CapturedResponse();
    const out = new ChunkWriter(res as never, 'chatcmpl-1', 'default');
    out.open();
    const sse = new SseReply(out, (e) => ({ switchboard: { approval: e.approvals?.[0] ? { code: e.approvals[0].code } : undefined } }), false);
    const { before, done } = script(form);
    let finished = false;
    for (const e of [...before, done]) finished = sse.event({ ...e, turnId: 't-sse' } as TurnEvent);
    expect(finished).toBe(true);
    const chunks = res.chunks();
    const content = (c: Record<string, any>) => (c.choices?.[0]?.delta?.content as string | undefined) ?? '';
    const all = chunks.map(content).join('');
    // SSE cannot take text back: the withdrawn part came before the reset marker, nothing of it after.
    const resetAt = chunks.findIndex((c) => c.switchboard?.reset);
    expect(resetAt).toBeGreaterThan(0);
    expect(chunks.slice(0, resetAt).map(content).join('')).toBe(WITHDRAWN);
    expect(chunks.slice(resetAt).map(content).join('')).not.toContain(WITHDRAWN);
    expect(chunks.slice(resetAt).map(content).join('')).toContain(ANSWER);
    const tools = chunks.flatMap((c) => (c.switchboard?.tool ? [c.switchboard.tool] : []));
    expect(tools).toEqual([
      { name: 'shell_exec', status: 'started' },
      { name: 'shell_exec', status: `waiting for approval (code ${CODE})`, code: CODE },
    ]);
    const card = chunks.find((c) => c.switchboard?.approval && c.choices?.[0]?.finish_reason === null)!;
    expect(card.switchboard.approval).toMatchObject({ code: CODE, tool: 'shell_exec', tier: 'caution' });
    expect(content(card)).toMatch(new RegExp(`Approval needed \\(caution\\) to run shell_exec .* code ${CODE}\\. Reply YES ${CODE}`));
    expect(count(all, 'Approval needed')).toBe(1);
    expect(chunks.find((c) => c.switchboard?.notice)?.switchboard.notice).toBe(NOTICE);
    expect(res.text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });
});

/** What an HTTP client receives from the SSE writer (the response object it writes to). */
/** What ChunkWriter uses of a ServerResponse: head, writes, close events. */
class CapturedResponse extends EventEmitter {
  text = '';
  ended = false;
  headersSent = false;
  destroyed = false;
  socket = { setNoDelay() {} };
  writeHead() {
    this.headersSent = true;
    return this;
  }
  cork() {}
  uncork() {}
  write(s: string) {
    this.text += s;
    return true;
  }
  end() {
    this.ended = true;
  }
  chunks(): Array<Record<string, any>> {
    return this.text
      .split('\n\n')
      .filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
      .map((l) => JSON.parse(l.slice(6)) as Record<string, any>);
  }
}
