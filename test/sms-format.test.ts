/**
 * The sms channel's pure parts: markdown → plain text, splitting into numbered
 * messages, keywords, configuration errors.
 */
import { describe, expect, it } from 'vitest';
import { toPlainText } from '../channels/sms/format.js';
import { plugin } from '../channels/sms/index.js';
import { keywordOf } from '../channels/sms/keywords.js';
import { splitMessage } from '../channels/sms/split.js';
import { instantiate } from '../src/channel/plugin.js';
import { ConfigError } from '../src/config.js';

describe('sms formatting', () => {
  it('strips markdown to plain text', () => {
    const md = [
      '# Title',
      '',
      'Some **bold**, __strong__, *italic*, _under_ and ~~gone~~ text with `a*b*c` and snake_case_name.',
      '> quoted',
      '* one',
      '+ two',
      '1. first',
      '',
      '---',
      'See [the docs](https://example.com/docs) or <https://example.com>, ![logo](https://x/y.png).',
      '',
      '| a | b |',
      '|---|:-:|',
      '| 1 | 2 |',
      '',
      '```ts',
      'const x = **y**;',
      '```',
      '\u201cQuoted\u201d \u2014 it\u2019s\u2026 fine\\*',
    ].join('\n');
    expect(toPlainText(md)).toBe(
      [
        'Title',
        '',
        'Some bold, strong, italic, under and gone text with a*b*c and snake_case_name.',
        'quoted',
        '- one',
        '- two',
        '1. first',
        '',
        'See the docs (https://example.com/docs) or https://example.com, logo.',
        '',
        'a | b',
        '1 | 2',
        '',
        'const x = **y**;',
        '"Quoted" - it\'s... fine*',
      ].join('\n'),
    );
  });

  it('keeps short replies whole and unnumbered', () => {
    expect(splitMessage('  hello there  ', 1600)).toEqual(['hello there']);
    expect(splitMessage('', 1600)).toEqual([]);
    const exact = 'x'.repeat(1600);
    expect(splitMessage(exact, 1600)).toEqual([exact]);
  });

  it('splits long replies at sentence boundaries, numbered, within the limit', () => {
    const sentences = Array.from({ length: 120 }, (_, i) => `Sentence number ${i} says something moderately long about topic ${i}.`);
    const text = sentences.join(' ');
    const parts = splitMessage(text, 1600);
    expect(parts.length).toBeGreaterThan(2);
    parts.forEach((p, i) => {
      expect(p.length).toBeLessThanOrEqual(1600);
      expect(p.startsWith(`(${i + 1}/${parts.length}) `)).toBe(true);
      expect(p).toMatch(/\.$/); // ends at a sentence
    });
    const joined = parts.map((p) => p.replace(/^\(\d+\/\d+\) /, '')).join(' ');
    expect(joined).toBe(text);
  });

  it('prefers paragraph breaks, falls back to words, then hard cuts', () => {
    const para = `${'a'.repeat(1000)}.\n\n${'b '.repeat(400)}`;
    const parts = splitMessage(para, 1600);
    expect(parts[0]).toBe(`(1/2) ${'a'.repeat(1000)}.`);
    const words = Array.from({ length: 400 }, () => 'word').join(' ');
    for (const p of splitMessage(words, 1600)) expect(p).toMatch(/^\(\d\/\d\) word( word)*$/);
    const blob = '😀'.repeat(1000); // 2000 code units, no spaces: hard cut, not inside a pair
    const cut = splitMessage(blob, 1600);
    expect(cut.every((p) => p.length <= 1600 && !/[\uD800-\uDBFF]$/.test(p))).toBe(true);
    expect(cut.map((p) => p.replace(/^\(\d\/\d\) /, '')).join('')).toBe(blob);
  });

  it('accounts for two-digit numbering', () => {
    const text = Array.from({ length: 2000 }, (_, i) => `Item ${i} is here.`).join(' ');
    const parts = splitMessage(text, 160);
    expect(parts.length).toBeGreaterThanOrEqual(100);
    expect(parts.every((p) => p.length <= 160)).toBe(true);
    expect(parts[parts.length - 1]!.startsWith(`(${parts.length}/${parts.length}) `)).toBe(true);
  });
});

describe('sms keywords and replays', () => {
  it('recognizes the carrier keywords, alone, tolerantly', () => {
    for (const w of ['STOP', 'stop', ' Stop. ', 'STOPALL', 'unsubscribe', 'CANCEL', 'end', 'QUIT!']) expect(keywordOf(w)).toBe('stop');
    for (const w of ['START', 'yes', 'UNSTOP']) expect(keywordOf(w)).toBe('start');
    for (const w of ['HELP', 'info?']) expect(keywordOf(w)).toBe('help');
    for (const w of ['YES K7Q2P', 'please stop', 'stopping', 'hello', '']) expect(keywordOf(w)).toBeNull();
  });
});

describe('sms configuration', () => {
  const env = { TWILIO_ACCOUNT_SID: `AC${'0'.repeat(32)}`, TWILIO_AUTH_TOKEN: 'secret-token' };
  const err = (raw: unknown, e: Record<string, string | undefined> = env) => {
    try {
      instantiate(plugin, raw, e);
    } catch (x) {
      expect(x).toBeInstanceOf(ConfigError);
      return (x as Error).message;
    }
    throw new Error('no error');
  };

  it('configures with the conventional environment variables', () => {
    const c = instantiate(plugin, { publicUrl: 'https://bot.example.com/' }, env);
    expect(c.name).toBe('sms');
    expect(c.listener).toBeDefined();
    expect(c.deliverer).toBeDefined();
  });

  it('names the bad key', () => {
    expect(err({})).toMatch(/^invalid configuration at "channels\.sms\.publicUrl"/);
    expect(err({ publicUrl: 'ftp://x' })).toMatch(/"channels\.sms\.publicUrl"/);
    expect(err({ publicUrl: 'https://x', maxMessageChars: 5000 })).toMatch(/"channels\.sms\.maxMessageChars"/);
    expect(err({ publicUrl: 'https://x', bogus: 1 })).toMatch(/"channels\.sms\.bogus"/);
    expect(err({ publicUrl: 'https://x' }, { TWILIO_AUTH_TOKEN: 't' })).toMatch(/"channels\.sms\.accountSid".*TWILIO_ACCOUNT_SID/);
    expect(err({ publicUrl: 'https://x', authTokenEnv: 'MY_TOKEN' })).toMatch(/"channels\.sms\.authTokenEnv".*MY_TOKEN/);
    expect(err({ publicUrl: 'https://x', accountSid: 'nope' })).toMatch(/"channels\.sms\.accountSid"/);
    expect(err({ publicUrl: 'https://x', statusPath: '/v1/channels/sms/inbound' })).toMatch(/"channels\.sms\.statusPath"/);
    // The token is never part of a message.
    expect(err({ publicUrl: 'https://x', bogus: 1 })).not.toContain('secret-token');
  });
});
