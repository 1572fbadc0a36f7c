/**
 * Group-chat manners on Slack, end to end over Socket Mode: recorded-shape events from the fake
 * Slack through the real bolt App and a real embedded gateway. A message not addressed to the bot
 * gets no inbox row, no post or stream in the channel and no model request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, type FakeRequest, lastUserText, reply } from './fakes/fake-llm.js';
import { APP_TOKEN, BOT, BOT_TOKEN, FakeSlack } from './fakes/slack-api.js';
import { eventually, startGateway, testConfig } from './support/gateway.js';

process.env.SB_TEST_SLACK_BOT = BOT_TOKEN;
process.env.SB_TEST_SLACK_APP = APP_TOKEN;
process.env.SB_TEST_SLACK_LLM = 'fake-key';

/** Another app's bot in the workspace: a bot id and its bot user. */
const FRIEND = { botId: 'BFRIEND', userId: 'UFRIEND' };
const STRANGER = { botId: 'BSTRANGER', userId: 'USTRANGER' };

const isClassifier = (req: FakeRequest) => JSON.stringify(req.body.messages?.[0] ?? '').includes('You watch a group chat');

/** The classifier's question gets YES for a question, NO otherwise; everything else is the agent's echo. */
function model(req: FakeRequest) {
  const text = lastUserText(req.body);
  if (isClassifier(req)) return reply(/^Message:\n([\s\S]*)\n\nYES or NO\?$/.exec(text)?.[1]?.includes('?') ? 'YES' : 'NO');
  return reply(`echo: ${text}`);
}

describe('slack manners', () => {
  let llm: FakeLlm;
  let slack: FakeSlack;
  let gw: Gateway;

  const event = (ev: any) => slack.sendEnvelope('events_api', slack.eventBody(ev));
  const answerIn = (channel: string, thread: string, re: RegExp) =>
    eventually(async () => slack.botMessages(channel, thread).find((m) => !m.streaming && re.test(m.text)), 20_000);
  const modelCallsAbout = (text: string) => llm.requests.filter((r) => lastUserText(r.body).includes(text)).length;
  const postsIn = (channel: string) =>
    ['chat.postMessage', 'chat.startStream', 'chat.postEphemeral'].flatMap((m) => slack.callsOf(m)).filter((c) => c.args.channel === channel).length;
  const botEvent = (who: { botId: string; userId: string }, channel: string, text: string) => ({
    ...slack.userMessage({ user: who.userId, channel, text, clientMsgId: null }),
    bot_id: who.botId,
    app_id: `A${who.botId}`,
    bot_profile: { id: who.botId, app_id: `A${who.botId}`, name: who.botId.toLowerCase(), deleted: false },
  });

  async function ignored(reason: string): Promise<number> {
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    const m = new RegExp(`switchboard_room_messages_ignored_total\\{channel="slack",reason="${reason}"\\} (\\d+)`).exec(text);
    return m ? Number(m[1]) : 0;
  }

  /** Sends an event that must be left alone, waits until the gateway decided so, and checks nothing happened. */
  async function silent(reason: string, ev: any, opts: { classifierAsked?: boolean } = {}): Promise<void> {
    const before = await ignored(reason);
    const posts = postsIn(ev.channel);
    expect(await event(ev)).toEqual({});
    await eventually(async () => (await ignored(reason)) > before, 20_000);
    const rows = await gw.infra.store.db.query(`select 1 from inbox where channel = 'slack' and external_id in ($1, $2)`, [
      ev.client_msg_id ?? '-',
      `${ev.channel}:${ev.ts}`,
    ]);
    expect(rows.rows).toHaveLength(0);
    expect(postsIn(ev.channel)).toBe(posts);
    const about = ev.text.replace(/<@\w+>\s*/g, '');
    // At most the classifier's one question (ambient mode); never a turn.
    expect(llm.requests.filter((r) => lastUserText(r.body).includes(about) && !isClassifier(r))).toHaveLength(0);
    expect(modelCallsAbout(about)).toBe(opts.classifierAsked ? 1 : 0);
  }

  beforeAll(async () => {
    llm = new FakeLlm();
    slack = new FakeSlack({ pingMs: 300 });
    await Promise.all([llm.start(), slack.start()]);
    llm.respond(model);
    gw = await startGateway(
      testConfig(
        null,
        {},
        {
          providers: [{ id: 'main', api: 'openai-completions', model: 'fake', baseUrl: llm.openaiBaseUrl, apiKeyEnv: 'SB_TEST_SLACK_LLM' }],
          channels: {
            slack: {
              mode: 'socket',
              apiUrl: slack.apiUrl,
              botTokenEnv: 'SB_TEST_SLACK_BOT',
              appTokenEnv: 'SB_TEST_SLACK_APP',
              streaming: 'edit',
              groups: { allowBots: [FRIEND.botId], botLoopPerMinute: 1, ambientPerHour: 1, classifierSlot: 'main' },
            },
          },
          access: { slack: { policy: 'open' } },
        },
      ),
    );
    await eventually(async () => gw.channels.find((c) => c.name === 'slack')!.listener!.health().ok, 30_000);
  }, 240_000);
  afterAll(async () => {
    await gw?.close();
    await Promise.all([llm?.close(), slack?.close()]);
  });

  it('a mention is answered in its thread; a reply in that thread without a mention too; one to someone else there is not', async () => {
    const ev = slack.userMessage({ type: 'app_mention', user: 'UALICE', channel: 'C1', text: `<@${BOT.userId}> start here` });
    await event(ev);
    await answerIn('C1', ev.ts, /echo: start here/);
    const follow = slack.userMessage({ user: 'UALICE', channel: 'C1', text: 'and a follow-up', thread_ts: ev.ts });
    await event(follow);
    await answerIn('C1', ev.ts, /echo: and a follow-up/);
    await silent('someone_else', slack.userMessage({ user: 'UALICE', channel: 'C1', text: '<@UBOB> can you take this one', thread_ts: ev.ts }));
  });

  it('someone else mentioned at top level: silence; the name at a line start is a mention', async () => {
    await silent('someone_else', slack.userMessage({ user: 'UALICE', channel: 'C2', text: '<@UBOB> did the build pass' }));
    const named = slack.userMessage({ user: 'UALICE', channel: 'C2', text: 'morning all\nswitchboard, summarize the build' });
    await event(named);
    await answerIn('C2', named.ts, /summarize the build/);
  });

  it('another bot: silence unless allowed; the allowed one is answered within the loop guard', async () => {
    await silent('bot', botEvent(STRANGER, 'C3', `<@${BOT.userId}> stranger says hi`));
    const first = botEvent(FRIEND, 'C3', `<@${BOT.userId}> friend says hi`);
    await event(first);
    await answerIn('C3', first.ts, /echo: friend says hi/);
    // botLoopPerMinute: 1 — the next exchange this minute is refused.
    await silent('bot_loop', botEvent(FRIEND, 'C3', `<@${BOT.userId}> friend again`));
  });

  it('ambient: an unprompted reply the classifier approves, never two in a row, within the hourly budget', async () => {
    await silent('ambient_declined', slack.userMessage({ user: 'UALICE', channel: 'C4', text: 'lunch was great' }), { classifierAsked: true });
    const q = slack.userMessage({ user: 'UALICE', channel: 'C4', text: 'how do I rotate the signing secret?' });
    await event(q);
    await answerIn('C4', q.ts, /echo: how do I rotate/);
    await silent('ambient_in_a_row', slack.userMessage({ user: 'UBOB', channel: 'C4', text: 'and the app token?' }));
    const m = slack.userMessage({ type: 'app_mention', user: 'UBOB', channel: 'C4', text: `<@${BOT.userId}> thanks` });
    await event(m);
    await answerIn('C4', m.ts, /echo: thanks/);
    // Addressed since, but the hour's one unprompted reply is spent.
    await silent('ambient_budget', slack.userMessage({ user: 'UBOB', channel: 'C4', text: 'what about the bot token?' }));
  });
});
