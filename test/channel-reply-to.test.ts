import { describe, expect, it } from 'vitest';
import { plugin as discord } from '../channels/discord/index.js';
import { plugin as email } from '../channels/email/index.js';
import { plugin as http } from '../channels/http/index.js';
import { plugin as slack } from '../channels/slack/index.js';
import { plugin as sms } from '../channels/sms/index.js';
import { plugin as webhook } from '../channels/webhook/index.js';
import { bindDeliverer, storedTurnTarget } from '../src/channel/deliver.js';
import { ReplyToError } from '../src/channel/index.js';

/** Values no listener writes: each must be refused with a ReplyToError naming the channel. */
const HOSTILE_SHAPES: unknown[] = ['a string', 42, true, [], [{ channel: 'C1' }], () => 1];

const refuses = (parse: (raw: unknown) => unknown, raw: unknown, channel: string, what?: RegExp) => {
  let err: unknown;
  try {
    parse(raw);
  } catch (e) {
    err = e;
  }
  expect(err, `accepted ${JSON.stringify(raw)}`).toBeInstanceOf(ReplyToError);
  expect((err as Error).message).toMatch(new RegExp(`^${channel}: the stored reply target is not valid`));
  if (what) expect((err as Error).message).toMatch(what);
};

describe('slack parseReplyTo', () => {
  const good = { channel: 'C0123ABC', thread_ts: '1700000000.000100', ts: '1700000001.000200', team: 'T0ABC', user: 'U0ALICE', dm: false };
  it('reads what the listener stores, and null as no target', () => {
    expect(slack.parseReplyTo(good)).toEqual(good);
    expect(slack.parseReplyTo({ channel: 'D0DM', ts: '1.1', user: 'U1', dm: true })).toEqual({ channel: 'D0DM', ts: '1.1', user: 'U1', dm: true });
    expect(slack.parseReplyTo(null)).toBeNull();
    expect(slack.parseReplyTo(undefined)).toBeNull();
  });
  it('refuses hostile values', () => {
    for (const raw of HOSTILE_SHAPES) refuses((r) => slack.parseReplyTo(r), raw, 'slack');
    refuses((r) => slack.parseReplyTo(r), { ...good, channel: 'C1/../../chat.delete' }, 'slack', /"channel"/);
    refuses((r) => slack.parseReplyTo(r), { ...good, channel: 42 }, 'slack', /"channel"/);
    refuses((r) => slack.parseReplyTo(r), { ...good, ts: 'now' }, 'slack', /"ts"/);
    refuses((r) => slack.parseReplyTo(r), { ...good, thread_ts: { $gt: '' } }, 'slack', /"thread_ts"/);
    refuses((r) => slack.parseReplyTo(r), { ...good, dm: 'yes' }, 'slack', /"dm"/);
    refuses((r) => slack.parseReplyTo(r), { ...good, user: 'x'.repeat(5000) }, 'slack', /"user"/);
    // An inherited property is not the row's: "__proto__" smuggles nothing in.
    refuses((r) => slack.parseReplyTo(r), JSON.parse('{"__proto__": {"channel": "C1", "ts": "1.1", "user": "U1"}}'), 'slack', /"channel"/);
  });
});

describe('discord parseReplyTo', () => {
  const good = { channelId: '111111111111111111', messageId: '222222222222222222', guildId: '333333333333333333' };
  it('reads guild and DM targets', () => {
    expect(discord.parseReplyTo(good)).toEqual(good);
    expect(discord.parseReplyTo({ ...good, guildId: null })).toEqual({ ...good, guildId: null });
    expect(discord.parseReplyTo(null)).toBeNull();
  });
  it('refuses hostile values', () => {
    for (const raw of HOSTILE_SHAPES) refuses((r) => discord.parseReplyTo(r), raw, 'discord');
    refuses((r) => discord.parseReplyTo(r), { ...good, channelId: '../../guilds/1' }, 'discord', /"channelId"/);
    refuses((r) => discord.parseReplyTo(r), { ...good, messageId: 7 }, 'discord', /"messageId"/);
    refuses((r) => discord.parseReplyTo(r), { ...good, guildId: 'everyone' }, 'discord', /"guildId"/);
  });
});

describe('sms parseReplyTo', () => {
  it('reads numbers, short codes and sender ids', () => {
    expect(sms.parseReplyTo({ to: '+15551230000', from: '+15559870000' })).toEqual({ to: '+15551230000', from: '+15559870000' });
    expect(sms.parseReplyTo({ to: '+447700900123', from: '12345' })).toEqual({ to: '+447700900123', from: '12345' });
    expect(sms.parseReplyTo({ to: 'whatsapp:+15551230000', from: 'whatsapp:+15559870000' })).toEqual({
      to: 'whatsapp:+15551230000',
      from: 'whatsapp:+15559870000',
    });
    expect(sms.parseReplyTo(null)).toBeNull();
  });
  it('refuses hostile values', () => {
    for (const raw of HOSTILE_SHAPES) refuses((r) => sms.parseReplyTo(r), raw, 'sms');
    refuses((r) => sms.parseReplyTo(r), { to: '+1555&Body=pwned', from: '+15559870000' }, 'sms', /"to"/);
    refuses((r) => sms.parseReplyTo(r), { to: '+15551230000' }, 'sms', /"from"/);
    refuses((r) => sms.parseReplyTo(r), { to: ['+15551230000'], from: '+15559870000' }, 'sms', /"to"/);
  });
});

describe('email parseReplyTo', () => {
  const good = { to: 'ann@example.com', subject: 'Question', messageId: '<q1@example.com>', references: ['<r0@example.com>'] };
  it('reads a threaded target, and one without Message-ID', () => {
    expect(email.parseReplyTo(good)).toEqual(good);
    expect(email.parseReplyTo({ to: 'ann@example.com', subject: '', references: [] })).toEqual({ to: 'ann@example.com', subject: '', references: [] });
    expect(email.parseReplyTo(null)).toBeNull();
  });
  it('refuses hostile values: no header injection through a stored value', () => {
    for (const raw of HOSTILE_SHAPES) refuses((r) => email.parseReplyTo(r), raw, 'email');
    refuses((r) => email.parseReplyTo(r), { ...good, to: 'ann@example.com\r\nBcc: all@example.com' }, 'email', /"to"/);
    refuses((r) => email.parseReplyTo(r), { ...good, to: 'ann@example.com, eve@example.com' }, 'email', /"to"/);
    refuses((r) => email.parseReplyTo(r), { ...good, subject: 'Hi\nBcc: eve@example.com' }, 'email', /"subject"/);
    refuses((r) => email.parseReplyTo(r), { ...good, messageId: '<a@b>\r\nX: y' }, 'email', /"messageId"/);
    refuses((r) => email.parseReplyTo(r), { ...good, references: 'x' }, 'email', /"references"/);
    refuses((r) => email.parseReplyTo(r), { ...good, references: ['<ok@x>', '<a@b>\nBcc: e@x'] }, 'email', /"references"/);
  });
});

describe('webhook parseReplyTo', () => {
  it('reads the hook and an optional callback', () => {
    expect(webhook.parseReplyTo({ hook: 'ci' })).toEqual({ hook: 'ci' });
    expect(webhook.parseReplyTo({ hook: 'ci', callbackUrl: 'https://example.com/cb' })).toEqual({ hook: 'ci', callbackUrl: 'https://example.com/cb' });
    expect(webhook.parseReplyTo(null)).toBeNull();
  });
  it('refuses hostile values', () => {
    for (const raw of HOSTILE_SHAPES) refuses((r) => webhook.parseReplyTo(r), raw, 'webhook');
    refuses((r) => webhook.parseReplyTo(r), { hook: '../other' }, 'webhook', /"hook"/);
    refuses((r) => webhook.parseReplyTo(r), { hook: 'ci', callbackUrl: 'file:///etc/passwd' }, 'webhook', /"callbackUrl"/);
    refuses((r) => webhook.parseReplyTo(r), { hook: 'ci', callbackUrl: 'not a url' }, 'webhook', /"callbackUrl"/);
  });
});

describe('http parseReplyTo', () => {
  it('has no reply target: null is null, anything stored is refused', () => {
    expect(http.parseReplyTo(null)).toBeNull();
    refuses((r) => http.parseReplyTo(r), { channel: 'C1' }, 'http');
  });
});

describe('a deliverer gets the reply target parsed once (bindDeliverer)', () => {
  const row = (replyTo: unknown, id = 1) => ({ replyTo, sender: { id: `U${id}` } });
  const stored = (messages: Array<ReturnType<typeof row>>) =>
    storedTurnTarget({ id: 't1', attempt: 1 }, { id: 'c1', key: 'sms/+1555/+1666/-', channel: 'sms', agent: 'default' }, messages);
  const seen: unknown[] = [];
  const deliverer = { open: (t: { replyTo: unknown; sender?: unknown }) => (seen.push(t), { event() {}, close: async () => {} }) };

  it('takes the newest message that has a target, and its sender', async () => {
    const bound = bindDeliverer(deliverer as never, (raw) => sms.parseReplyTo(raw));
    bound.open(stored([row({ to: '+15550000001', from: '+15559990000' }, 1), row({ to: '+15550000002', from: '+15559990000' }, 2), row(null, 3)]), {} as never);
    expect(seen.at(-1)).toMatchObject({ replyTo: { to: '+15550000002', from: '+15559990000' }, sender: { id: 'U3' } });
    expect(seen.at(-1)).not.toHaveProperty('storedReplyTo');
    bound.open(stored([row(null)]), {} as never);
    expect(seen.at(-1)).toMatchObject({ replyTo: null });
  });

  it('a stored value the channel refuses fails the delivery with its error', async () => {
    const bound = bindDeliverer(deliverer as never, (raw) => sms.parseReplyTo(raw));
    expect(() => bound.open(stored([row({ to: '+1555 0000\nBcc: all', from: '+15559990000' })]), {} as never)).toThrow(ReplyToError);
  });
});
