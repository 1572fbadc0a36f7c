/**
 * The Telegram channel's pure parts against hostile input: the HTML it makes is always what
 * Telegram's parser takes (checked by the fake's parser), group addressing cannot be faked by
 * look-alike mentions, stored reply targets and button data are validated, configuration refuses
 * what it must.
 */
import type { Message } from 'grammy/types';
import { describe, expect, it } from 'vitest';
import { builtinChannels } from '../app/register-builtin-channels.js';
import { addressedBy, addressFacts, strippedText } from '../channels/telegram/addressing.js';
import { parseCallbackData } from '../channels/telegram/approvals.js';
import { CatchUp } from '../channels/telegram/catch-up.js';
import { parseTelegramConfig } from '../channels/telegram/config.js';
import { htmlToPlain, toTelegramHtml } from '../channels/telegram/format.js';
import { probeTelegram } from '../channels/telegram/probe.js';
import { parseTelegramReplyTo } from '../channels/telegram/reply-to.js';
import { setup } from '../channels/telegram/setup.js';
import { ReplyToError } from '../src/channel/index.js';
import { BOT_TOKEN, FakeTelegram, parseHtml } from './fakes/telegram-server.js';

const self = { id: 42, username: 'switchboard_bot' };
const env = { TELEGRAM_BOT_TOKEN: '1:abc' };

function group(text: string, extra: Partial<Message> = {}): Message {
  const entities: NonNullable<Message['entities']> = [];
  const cmd = /^\/\w+(@\w+)?/.exec(text);
  if (cmd) entities.push({ type: 'bot_command', offset: 0, length: cmd[0].length });
  // As Telegram: no mention inside a command.
  for (const m of text.matchAll(/@\w+/g)) if (m.index >= (cmd?.[0].length ?? 0)) entities.push({ type: 'mention', offset: m.index, length: m[0].length });
  return {
    message_id: 10,
    date: 0,
    chat: { id: -100, type: 'supergroup', title: 'g' },
    from: { id: 7, is_bot: false, first_name: 'A' },
    text,
    entities,
    ...extra,
  } as Message;
}

describe('telegram HTML', () => {
  const hostile = [
    '<b>unclosed',
    '</i> stray close',
    '**bold *crossed** italic*',
    '[**link](https://x.example/a_b*c*)** after',
    '`code with <tags> & **stars**` and *emph*',
    '```js\nconst a = 1 < 2 && "x";\n```\n**after**',
    '```\nunclosed fence <b>\n',
    '& &amp; &lt; &#99999999; &bogus;',
    '_under_score_ snake_case_name __dunder__',
    '# Heading with <script>\n~~gone~~ ~~open',
    '\u0000placeholder\u00000\u0000 injection',
    '[label](javascript:alert(1)) [ok](https://ok.example/?a=1&b="2")',
  ];
  it.each(hostile)('is always accepted by Telegram and shows the text: %s', (md) => {
    const html = toTelegramHtml(md);
    const parsed = parseHtml(html);
    expect(parsed).not.toHaveProperty('error');
    expect(htmlToPlain(html)).toBe((parsed as { text: string }).text);
    // Only Telegram's tags, and never a javascript: link.
    expect(html).not.toMatch(/<(?!\/?(b|i|s|code|pre|a)[ >])/);
    expect(html).not.toContain('href="javascript:');
  });

  it('renders the markdown models write', () => {
    expect(toTelegramHtml('**b** *i* `c` ~~s~~ [l](https://e.example)')).toBe('<b>b</b> <i>i</i> <code>c</code> <s>s</s> <a href="https://e.example">l</a>');
    expect(toTelegramHtml('```py\nx = 1\n```')).toBe('<pre><code class="language-py">x = 1</code></pre>');
  });
});

describe('telegram group addressing', () => {
  it('gives the gateway manners the facts: someone else mentioned or replied to, the bot addressed', () => {
    const never = () => false;
    expect(addressFacts(group('@alice can you look'), self, never)).toMatchObject({ isDirect: false, mentionsBot: false, mentionsOthers: true });
    expect(addressFacts(group('@switchboard_bot and @alice'), self, never)).toMatchObject({ mentionsBot: true, mentionsOthers: true });
    expect(addressFacts(group('/new'), self, never)).toMatchObject({ mentionsBot: true, mentionsOthers: false });
    const toAlice = {
      ...group('thanks'),
      reply_to_message: { message_id: 9, date: 0, chat: group('x').chat, from: { id: 77, is_bot: false, first_name: 'Alice' } },
    };
    expect(addressFacts(toAlice as never, self, never)).toMatchObject({ replyToBot: false, mentionsOthers: true });
    expect(addressFacts(group('hello'), self, (t) => t.startsWith('hello'))).toMatchObject({ startsWithBotName: true });
  });

  it('a mention of the bot, its command or a reply to it addresses it; look-alikes do not', () => {
    expect(addressedBy(group('@switchboard_bot hi'), self)).toBe('mention');
    expect(addressedBy(group('@SwitchBoard_Bot hi'), self)).toBe('mention');
    expect(addressedBy(group('@switchboard_bot_fake hi'), self)).toBeNull();
    expect(addressedBy(group('hi @switchboard_botx'), self)).toBeNull();
    // The handle as plain text (no mention entity: e.g. inside code) is no mention.
    expect(addressedBy(group('`@switchboard_bot`', { entities: [{ type: 'code', offset: 0, length: 18 }] }), self)).toBeNull();
    expect(addressedBy(group('/new@switchboard_bot'), self)).toBe('command');
    expect(addressedBy(group('/new'), self)).toBe('command');
    expect(addressedBy(group('/new@other_bot'), self)).toBeNull();
    expect(addressedBy(group('/weather'), self)).toBeNull();
    // A text_mention of another user is not one of the bot.
    expect(
      addressedBy(group('Bob look', { entities: [{ type: 'text_mention', offset: 0, length: 3, user: { id: 9, is_bot: false, first_name: 'Bob' } }] }), self),
    ).toBeNull();
    const reply = { message_id: 5, date: 0, chat: { id: -100, type: 'supergroup' }, from: { id: 42, is_bot: true, first_name: 'S' } } as Message;
    expect(addressedBy(group('so?', { reply_to_message: reply as never }), self)).toBe('reply');
    // In a forum topic the bot created, every message "replies" to the topic's first message.
    expect(
      addressedBy(
        group('so?', {
          is_topic_message: true,
          message_thread_id: 5,
          reply_to_message: { ...reply, forum_topic_created: { name: 't', icon_color: 0 } } as never,
        }),
        self,
      ),
    ).toBeNull();
  });

  it('the mention is taken out and /cmd@bot reads as /cmd', () => {
    expect(strippedText(group('@switchboard_bot   hello  there'), self)).toBe('hello there');
    expect(strippedText(group('/status@switchboard_bot'), self)).toBe('/status');
    expect(strippedText(group('/status@other_bot'), self)).toBe('/status@other_bot');
  });
});

describe('telegram stored values and settings', () => {
  it('a stored reply target is validated', () => {
    expect(parseTelegramReplyTo({ chatId: '-1001', messageId: 5, threadId: 7 })).toEqual({ chatId: '-1001', messageId: 5, threadId: 7 });
    expect(parseTelegramReplyTo(null)).toBeNull();
    for (const bad of [
      { chatId: 'x', messageId: 1 },
      { chatId: '1', messageId: -1 },
      { chatId: '1', messageId: 1.5 },
      { chatId: '1' },
      [],
      'str',
      { chatId: '1', messageId: 1, threadId: '7' },
    ])
      expect(() => parseTelegramReplyTo(bad), JSON.stringify(bad)).toThrow(ReplyToError);
  });

  it('button data is ours or nothing', () => {
    expect(parseCallbackData('sb:approve:k7q4p')).toEqual({ decision: 'approve', code: 'K7Q4P' });
    for (const bad of ['sb:approve:', 'sb:delete:K7Q4P', 'sb:approve:K7Q4P:extra', 'sb:approve:../../x', undefined, 'x'.repeat(64)])
      expect(parseCallbackData(bad)).toBeNull();
  });

  it('configuration: the token is required, a webhook needs a proper secret', () => {
    expect(() => parseTelegramConfig({}, {})).toThrow(/TELEGRAM_BOT_TOKEN/);
    expect(() => parseTelegramConfig({ publicUrl: 'https://bot.example.com' }, env)).toThrow(/webhookSecretEnv/);
    expect(() => parseTelegramConfig({ publicUrl: 'https://bot.example.com' }, { ...env, TELEGRAM_WEBHOOK_SECRET: 'short' })).toThrow(/webhookSecretEnv/);
    expect(() => parseTelegramConfig({ publicUrl: 'https://bot.example.com/' }, env)).toThrow(/publicUrl/);
    expect(() => parseTelegramConfig({ editIntervalMs: 100 }, env)).toThrow(/editIntervalMs/);
    expect(() => parseTelegramConfig({ bogus: 1 }, env)).toThrow(/bogus/);
    const ok = parseTelegramConfig({ publicUrl: 'https://bot.example.com' }, { ...env, TELEGRAM_WEBHOOK_SECRET: 's'.repeat(32) });
    expect(ok.webhookSecret).toBe('s'.repeat(32));
    expect(parseTelegramConfig({}, env).catchUp).toEqual({ enabled: true, maxAgeMinutes: 60, maxMessages: 20, offlineReply: true });
  });

  it('catch-up: too old, past the cap per conversation, disabled; one offline reply per conversation', () => {
    const start = 10_000_000;
    const c = new CatchUp({ enabled: true, maxAgeMinutes: 10, maxMessages: 1, offlineReply: 'sorry' }, start);
    expect(c.judge('a', start - 11 * 60_000, start)).toBe('catch_up_too_old');
    expect(c.judge('a', start - 60_000, start)).toBe('answer');
    expect(c.judge('a', start - 50_000, start)).toBe('catch_up_too_many');
    expect(c.judge('b', start - 50_000, start)).toBe('answer');
    c.refund('a');
    expect(c.judge('a', start - 40_000, start)).toBe('answer');
    // Live messages are not capped.
    expect(c.judge('a', start + 5_000, start + 6_000)).toBe('answer');
    expect(c.offlineReplyFor('k')).toBe('sorry');
    expect(c.offlineReplyFor('k')).toBeUndefined();
    const off = new CatchUp({ enabled: false, maxAgeMinutes: 60, maxMessages: 5, offlineReply: false }, start);
    expect(off.judge('a', start - 60_000, start)).toBe('catch_up_too_old');
    expect(off.judge('a', start + 1_000, start + 2_000)).toBe('answer');
    expect(off.offlineReplyFor('k')).toBeUndefined();
    expect(new CatchUp({ enabled: true, maxAgeMinutes: 60, maxMessages: 5, offlineReply: true }, start).offlineReplyFor('k')).toMatch(/offline/);
  });
});

describe('telegram doctor --probe', () => {
  it('checks the token, says the privacy mode, and compares the webhook with the configured one', async () => {
    const fake = await new FakeTelegram().start();
    try {
      const polling = await probeTelegram(parseTelegramConfig({ apiRoot: fake.apiRoot }, { TELEGRAM_BOT_TOKEN: BOT_TOKEN }));
      expect(polling.map((p) => [p.name, p.ok])).toEqual([
        ['bot token', true],
        ['privacy mode', true],
        ['webhook', true],
      ]);
      expect(polling[0]!.message).toContain('@switchboard_bot');
      expect(polling[1]!.message).toMatch(/^on: /);
      const hooked = await probeTelegram(
        parseTelegramConfig(
          { apiRoot: fake.apiRoot, publicUrl: 'https://bot.example.com' },
          { TELEGRAM_BOT_TOKEN: BOT_TOKEN, TELEGRAM_WEBHOOK_SECRET: 's'.repeat(20) },
        ),
      );
      expect(hooked.find((p) => p.name === 'webhook')).toMatchObject({ ok: false, message: expect.stringMatching(/not set/) });
      const refused = await probeTelegram(parseTelegramConfig({ apiRoot: fake.apiRoot }, { TELEGRAM_BOT_TOKEN: '1:wrong' }));
      expect(refused).toEqual([{ name: 'bot token', ok: false, message: expect.stringMatching(/refused the bot token \(TELEGRAM_BOT_TOKEN\): Unauthorized/) }]);
    } finally {
      await fake.close();
    }
  });
});

describe('telegram in switchboard init', () => {
  it('is offered, and makes a polling or a webhook configuration with the secrets each needs', async () => {
    expect((await builtinChannels().setups()).map((x) => x.name)).toContain('telegram');
    expect(setup.config({})).toEqual({});
    expect(setup.secrets({}).map((x) => x.name)).toEqual(['TELEGRAM_BOT_TOKEN']);
    const hook = { 'telegram-public-url': 'https://bot.example.com' };
    expect(setup.config(hook)).toEqual({ publicUrl: 'https://bot.example.com' });
    expect(setup.secrets(hook).map((x) => x.name)).toEqual(['TELEGRAM_BOT_TOKEN', 'TELEGRAM_WEBHOOK_SECRET']);
    expect(setup.guide(hook)).toContain('https://bot.example.com/v1/channels/telegram/webhook');
    const q = setup.questions[0]!;
    for (const bad of ['http://bot.example.com', 'https://bot.example.com/', 'bot.example.com', 'https://a b']) expect(q.validate!(bad), bad).toBeDefined();
    expect(q.validate!('https://bot.example.com/sb')).toBeUndefined();
    // What init writes is what the channel accepts.
    expect(() => parseTelegramConfig(setup.config(hook), { TELEGRAM_BOT_TOKEN: '1:x', TELEGRAM_WEBHOOK_SECRET: 'a'.repeat(32) })).not.toThrow();
  });
});
