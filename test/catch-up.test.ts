/**
 * Catch-up after downtime, end to end: a real gateway is stopped, people write meanwhile (only the
 * platform's history has it: Discord's GET /channels/{id}/messages, Slack's conversations.history
 * and .replies, served by the fakes as the real APIs page and order them), and the gateway comes
 * back. What is young enough is answered once, in order; what is too old gets one offline reply;
 * a second restart answers nothing again. The drops are counted in /metrics and the console.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { DEFAULT_OFFLINE_REPLY } from '../src/channel/catch-up.js';
import type { Config } from '../src/config.js';
import { FakeDiscord, type FakeUser } from './fakes/discord-server.js';
import { FakeLlm, lastUserText, reply } from './fakes/fake-llm.js';
import { APP_TOKEN, BOT, BOT_TOKEN, FakeSlack } from './fakes/slack-api.js';
import { eventually, startGateway, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';

const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000);

/** Polls until `get()` deep-equals `want` (or the time is up) and returns the last value, for one clear assertion. */
async function settled<T>(get: () => T | Promise<T>, want: T, timeoutMs = 30_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last = await get();
  while (JSON.stringify(last) !== JSON.stringify(want) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    last = await get();
  }
  return last;
}

async function dropped(gw: Gateway, channel: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^switchboard_messages_dropped_total\{([^}]*)\} (\d+)/gm)) {
    const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (labels.channel === channel) out[labels.reason!] = Number(m[2]);
  }
  return out;
}

async function consoleDropped(gw: Gateway): Promise<Array<{ channel: string; reason: string; count: number }>> {
  const r = await fetch(`${gw.url}/v1/console/state`, { headers: { authorization: `Bearer ${TEST_OPERATOR_KEY}` } });
  return ((await r.json()) as { dropped: Array<{ channel: string; reason: string; count: number }> }).dropped;
}

describe('discord: catch-up after downtime', () => {
  const GUILD = '710000000000000001';
  const CHAN = '710000000000000010';
  const DM = '710000000000000030';
  const ALICE: FakeUser = { id: '610000000000000001', username: 'alice' };
  let fake: FakeDiscord;
  let llm: FakeLlm;
  let cfg: Config;
  let gw: Gateway | undefined;

  const start = async () => {
    gw = await startGateway(cfg);
    const listener = gw.channels.find((c) => c.name === 'discord')!.listener!;
    await eventually(async () => listener.health().ok, 15_000);
  };
  const stop = async () => {
    await gw?.close();
    gw = undefined;
  };
  const replies = (channelId: string) => fake.botMessages(channelId).map((m) => ({ to: m.message_reference?.message_id, text: m.content }));
  const asked = () => llm.requests.map((r) => lastUserText(r.body));

  beforeAll(async () => {
    process.env.DISCORD_BOT_TOKEN = 'fake-bot-token';
    fake = await new FakeDiscord().start();
    fake.addGuild(GUILD, 'Catch-up guild', [{ id: CHAN, name: 'general' }]);
    fake.addDm(DM);
    llm = new FakeLlm();
    await llm.start();
    llm.respond((req) => reply(`echo: ${lastUserText(req.body)}`));
    cfg = testConfig(
      llm,
      {},
      {
        channels: {
          discord: {
            apiBaseUrl: fake.apiUrl,
            channels: { [CHAN]: { requireMention: false } },
            registerCommands: false,
            catchUp: { maxAgeMinutes: 60, maxMessages: 2 },
          },
        },
        access: { discord: { policy: 'open' } },
      },
    );
    await start();
  }, 120_000);
  afterAll(async () => {
    await stop();
    await llm?.close();
    await fake?.close();
  });

  it('answers what came while it was down once and in order, skips the old with one offline reply, and a second restart answers nothing again', async () => {
    // Seen live before the stop, four hours ago on Discord's clock (so was the bot's answer).
    fake.clockOffsetMs = -240 * 60_000;
    const seen = fake.userMessage({ channelId: CHAN, author: ALICE, content: 'before the stop' });
    const seenDm = fake.userMessage({ channelId: DM, author: ALICE, content: 'dm before the stop' });
    await eventually(async () => replies(CHAN).find((r) => r.to === seen) && replies(DM).find((r) => r.to === seenDm), 20_000);
    await stop();
    fake.clockOffsetMs = 0;

    // While the gateway is down: only Discord's history has these.
    const old1 = fake.userMessage({ channelId: CHAN, author: ALICE, content: 'three hours ago', at: minutesAgo(180) });
    const old2 = fake.userMessage({ channelId: CHAN, author: ALICE, content: 'two hours ago', at: minutesAgo(120) });
    const many = fake.userMessage({ channelId: CHAN, author: ALICE, content: 'one too many', at: minutesAgo(5) });
    const r1 = fake.userMessage({ channelId: CHAN, author: ALICE, content: 'recent one', at: minutesAgo(4) });
    const r2 = fake.userMessage({ channelId: CHAN, author: ALICE, content: 'recent two', at: minutesAgo(3) });
    const dm = fake.userMessage({ channelId: DM, author: ALICE, content: 'dm while down', at: minutesAgo(2) });
    const before = fake.requestsMatching('GET', new RegExp(`^/channels/${CHAN}/messages$`)).length;
    await start();

    // One offline reply, to the newest skipped message; then the two newest answered, in order.
    const want = [
      { to: many, text: DEFAULT_OFFLINE_REPLY },
      { to: r1, text: 'echo: recent one' },
      { to: r2, text: 'echo: recent two' },
    ];
    expect(await settled(() => replies(CHAN).filter((r) => r.to !== seen), want)).toEqual(want);
    expect(fake.requestsMatching('GET', new RegExp(`^/channels/${CHAN}/messages$`)).length).toBeGreaterThan(before);
    const dmWant = [{ to: dm, text: 'echo: dm while down' }];
    expect(await settled(() => replies(DM).filter((r) => r.to === dm), dmWant)).toEqual(dmWant);
    for (const gone of ['three hours ago', 'two hours ago', 'one too many']) expect(asked()).not.toContain(gone);
    for (const id of [old1, old2]) expect(replies(CHAN).filter((r) => r.to === id)).toEqual([]);
    expect(await dropped(gw!, 'discord')).toEqual({ catch_up_too_old: 2, catch_up_too_many: 1 });
    expect(await consoleDropped(gw!)).toEqual(
      expect.arrayContaining([
        { channel: 'discord', reason: 'catch_up_too_old', count: 2 },
        { channel: 'discord', reason: 'catch_up_too_many', count: 1 },
      ]),
    );

    // Again: nothing new to answer, no second offline reply. A live message answered means the catch-up is done.
    const posted = fake.botMessages(CHAN).length + fake.botMessages(DM).length;
    await stop();
    await start();
    const live = fake.userMessage({ channelId: DM, author: ALICE, content: 'live after the second restart' });
    await settled(() => replies(DM).filter((r) => r.to === live), [{ to: live, text: 'echo: live after the second restart' }]);
    expect(fake.botMessages(CHAN).length + fake.botMessages(DM).length).toBe(posted + 1);
    expect(asked().filter((t) => t === 'recent one')).toHaveLength(1);
  }, 180_000);
});

describe('slack: catch-up after downtime', () => {
  const DM = 'D0CATCH';
  const CHAN = 'C0CATCH';
  let slack: FakeSlack;
  let llm: FakeLlm;
  let cfg: Config;
  let gw: Gateway | undefined;

  const start = async () => {
    gw = await startGateway(cfg);
    const listener = gw.channels.find((c) => c.name === 'slack')!.listener!;
    await eventually(async () => listener.health().ok && slack.connections > 0, 15_000);
  };
  const stop = async () => {
    await gw?.close();
    gw = undefined;
  };
  const event = (ev: any) => slack.sendEnvelope('events_api', slack.eventBody(ev));
  const texts = (channel: string, thread?: string) => slack.botMessages(channel, thread).map((m) => m.text);
  const asked = () => llm.requests.map((r) => lastUserText(r.body));

  beforeAll(async () => {
    process.env.SB_CATCHUP_SLACK_BOT = BOT_TOKEN;
    process.env.SB_CATCHUP_SLACK_APP = APP_TOKEN;
    slack = new FakeSlack({ pingMs: 300 });
    llm = new FakeLlm();
    await Promise.all([slack.start(), llm.start()]);
    llm.respond((req) => reply(`echo: ${lastUserText(req.body)}`));
    slack.users.set('UALICE', { id: 'UALICE', name: 'alice' });
    cfg = testConfig(
      llm,
      {},
      {
        channels: {
          slack: {
            mode: 'socket',
            apiUrl: slack.apiUrl,
            botTokenEnv: 'SB_CATCHUP_SLACK_BOT',
            appTokenEnv: 'SB_CATCHUP_SLACK_APP',
            streaming: 'edit',
            catchUp: { maxAgeMinutes: 60, offlineReply: 'I was offline; please ask again.' },
          },
        },
        access: { slack: { policy: 'open' } },
      },
    );
    await start();
  }, 120_000);
  afterAll(async () => {
    await stop();
    await Promise.all([llm?.close(), slack?.close()]);
  });

  it('answers DMs and thread replies sent while it was down once and in order; the too old get one offline reply; a second restart answers nothing again', async () => {
    // Seen live before the stop, five hours ago on Slack's clock (so were the bot's answers).
    slack.clockOffsetMs = -300 * 60_000;
    const dm0 = slack.userMessage({ user: 'UALICE', channel: DM, text: 'dm before' });
    await event(dm0);
    const mention = slack.userMessage({ type: 'app_mention', user: 'UALICE', channel: CHAN, text: `<@${BOT.userId}> start a thread` });
    await event(mention);
    expect(await settled(() => texts(DM), ['echo: dm before'])).toEqual(['echo: dm before']);
    expect(await settled(() => texts(CHAN, mention.ts), ['echo: start a thread'])).toEqual(['echo: start a thread']);
    await stop();
    slack.clockOffsetMs = 0;

    // While the gateway is down: in Slack's history only (no event reaches it).
    slack.userMessage({ user: 'UALICE', channel: DM, text: 'dm three hours ago', at: minutesAgo(180) });
    slack.userMessage({ user: 'UALICE', channel: DM, text: 'dm two hours ago', at: minutesAgo(120) });
    slack.userMessage({ user: 'UALICE', channel: DM, text: 'dm recent one', at: minutesAgo(3) });
    slack.userMessage({ user: 'UALICE', channel: DM, text: 'dm recent two', at: minutesAgo(2) });
    slack.userMessage({ user: 'UALICE', channel: CHAN, text: 'chatter nobody asked the bot about', at: minutesAgo(2) });
    slack.userMessage({ user: 'UALICE', channel: CHAN, thread_ts: mention.ts, text: 'thread reply while down', at: minutesAgo(1) });
    await start();

    const dmWant = ['echo: dm before', 'I was offline; please ask again.', 'echo: dm recent one', 'echo: dm recent two'];
    expect(await settled(() => texts(DM), dmWant)).toEqual(dmWant);
    const threadWant = ['echo: start a thread', 'echo: thread reply while down'];
    expect(await settled(() => texts(CHAN, mention.ts), threadWant)).toEqual(threadWant);
    expect(slack.botMessages(CHAN).filter((m) => !m.thread_ts)).toEqual([]);
    for (const gone of ['dm three hours ago', 'dm two hours ago', 'chatter nobody asked the bot about']) expect(asked()).not.toContain(gone);
    expect(slack.callsOf('conversations.history').length).toBeGreaterThan(0);
    expect(await dropped(gw!, 'slack')).toEqual({ catch_up_too_old: 2 });

    // Again: nothing to answer twice. A live DM answered means the catch-up is done.
    const posted = slack.botMessages(DM).length + slack.botMessages(CHAN).length;
    await stop();
    await start();
    await event(slack.userMessage({ user: 'UALICE', channel: DM, text: 'live after the second restart' }));
    await eventually(async () => texts(DM).includes('echo: live after the second restart'), 20_000);
    expect(slack.botMessages(DM).length + slack.botMessages(CHAN).length).toBe(posted + 1);
    expect(asked().filter((t) => t === 'dm recent one')).toHaveLength(1);
  }, 180_000);

  it('pages conversations.history as Slack does: newest first, a cursor toward older ones', async () => {
    const ch = 'C0PAGES';
    for (let i = 0; i < 5; i++) slack.userMessage({ user: 'UALICE', channel: ch, text: `m${i}`, at: minutesAgo(10 - i) });
    const call = async (args: Record<string, string>) =>
      (await (
        await fetch(`${slack.apiUrl}conversations.history`, {
          method: 'POST',
          headers: { authorization: `Bearer ${BOT_TOKEN}`, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ channel: ch, ...args }),
        })
      ).json()) as { messages: Array<{ text: string }>; has_more: boolean; response_metadata: { next_cursor: string } };
    const p1 = await call({ limit: '2' });
    expect(p1.messages.map((m) => m.text)).toEqual(['m4', 'm3']);
    expect(p1.has_more).toBe(true);
    const p2 = await call({ limit: '2', cursor: p1.response_metadata.next_cursor });
    expect(p2.messages.map((m) => m.text)).toEqual(['m2', 'm1']);
    const p3 = await call({ limit: '2', cursor: p2.response_metadata.next_cursor });
    expect(p3.messages.map((m) => m.text)).toEqual(['m0']);
    expect(p3.has_more).toBe(false);
  });
});
