/**
 * The Discord channel's pure parts: splitting at 2000 characters without
 * breaking code fences, markdown adaptation, approval button ids, mention
 * rules, configuration errors.
 */
import { describe, expect, it } from 'vitest';
import { approvalCustomId, approvalRows, parseApprovalCustomId, rowsWithout, withLine } from '../channels/discord/approvals.js';
import { mentionRequired, parseDiscordConfig } from '../channels/discord/config.js';
import { baseKey } from '../channels/discord/conversations.js';
import { toDiscordMarkdown } from '../channels/discord/format.js';
import { plugin } from '../channels/discord/index.js';
import { splitMessage } from '../channels/discord/split.js';
import { instantiate } from '../src/channel/plugin.js';
import { checkSplit } from './fakes/discord-checks.js';

describe('splitMessage', () => {
  it('keeps a short reply whole', () => {
    expect(splitMessage('hello')).toEqual(['hello']);
    expect(splitMessage('x'.repeat(2000))).toEqual(['x'.repeat(2000)]);
  });

  it('splits long prose on line boundaries, each part at most 2000 characters', () => {
    const text = Array.from({ length: 120 }, (_, i) => `Line ${i}: ${'lorem ipsum '.repeat(4)}`).join('\n');
    const parts = splitMessage(text);
    expect(parts.length).toBeGreaterThan(2);
    checkSplit(parts, text);
  });

  it('never splits inside a code fence: closes it and reopens it with the same language', () => {
    const code = Array.from({ length: 150 }, (_, i) => `  const value${i} = compute(${i}); // step ${i}`).join('\n');
    const text = `Here is the code:\n\n\`\`\`typescript\n${code}\n\`\`\`\n\nAnd some words after it.`;
    const parts = splitMessage(text);
    expect(parts.length).toBeGreaterThan(2);
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(2000);
    checkSplit(parts, text);
    expect(parts[1]!.startsWith('```typescript\n')).toBe(true);
    expect(parts[0]!.endsWith('\n```')).toBe(true);
  });

  it('cuts a single enormous line (at a space when it can)', () => {
    const words = 'word '.repeat(1000).trim();
    const parts = splitMessage(words);
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(2000);
    expect(parts.join('')).toBe(words);
    const solid = 'x'.repeat(4500);
    expect(splitMessage(solid).map((p) => p.length)).toEqual([2000, 2000, 500]);
  });

  it('cuts a long line inside a fence and still balances it', () => {
    const text = '```\n' + 'y'.repeat(3000) + '\n```';
    checkSplit(splitMessage(text), text);
  });

  it('closes a fence still open at the end (a reply streaming mid-block)', () => {
    expect(splitMessage('look:\n```py\nprint(1)')).toEqual(['look:\n```py\nprint(1)\n```']);
  });

  it('is stable as a streamed reply grows: full parts do not change', () => {
    const full = Array.from({ length: 300 }, (_, i) => (i % 40 === 0 ? '```js' : i % 40 === 20 ? '```' : `line ${i} ${'z'.repeat(i % 30)}`)).join('\n');
    const final = splitMessage(full);
    for (let n = 100; n < full.length; n += 137) {
      const parts = splitMessage(full.slice(0, n));
      for (let k = 0; k < parts.length - 2; k++) expect(parts[k]).toBe(final[k]);
    }
  });
});

describe('toDiscordMarkdown', () => {
  it('keeps what Discord renders, adapts what it does not', () => {
    expect(toDiscordMarkdown('# Title\n**bold** _it_ `code`')).toBe('# Title\n**bold** _it_ `code`');
    expect(toDiscordMarkdown('#### Deep heading')).toBe('**Deep heading**');
    expect(toDiscordMarkdown('![a cat](https://x/cat.png)')).toBe('[a cat](https://x/cat.png)');
    expect(toDiscordMarkdown('a\n---\nb')).toBe('a\n\nb');
    expect(toDiscordMarkdown('| a | b |\n|---|---|\n| 1 | 2 |\nafter')).toBe('```\n| a | b |\n|---|---|\n| 1 | 2 |\n```\nafter');
  });

  it('leaves code fences alone', () => {
    const md = '```md\n#### not a heading\n| not | a table |\n```';
    expect(toDiscordMarkdown(md)).toBe(md);
  });
});

describe('approval buttons', () => {
  it('carry the decision and the code in the custom id', () => {
    expect(parseApprovalCustomId(approvalCustomId('approve', 'K7Q4P'))).toEqual({ decision: 'approve', code: 'K7Q4P' });
    expect(parseApprovalCustomId('something-else')).toBeNull();
    const rows = approvalRows([
      { code: 'K7Q4P', tool: 'shell_exec', alwaysPermitted: false },
      { code: 'AAAAA', tool: 'x', alwaysPermitted: true },
    ]);
    expect(rows[0]!.components.map((c) => (c as { custom_id: string }).custom_id)).toEqual(['sb-approval:approve:K7Q4P', 'sb-approval:deny:K7Q4P']);
    expect(rows[1]!.components).toHaveLength(3);
    expect(rowsWithout(rows, 'K7Q4P')).toEqual([rows[1]]);
    expect(withLine('x'.repeat(1990), 'decided').length).toBeLessThanOrEqual(2000);
  });
});

describe('configuration', () => {
  const env = { DISCORD_BOT_TOKEN: 't0ken' };
  it('has defaults and reads the token from the environment', () => {
    const c = parseDiscordConfig({}, env);
    expect(c).toMatchObject({ token: 't0ken', requireMention: true, editIntervalMs: 1000, apiBaseUrl: 'https://discord.com/api', dms: true });
    expect(instantiate(plugin, {}, env).listener).toBeDefined();
  });

  it('names the bad key', () => {
    expect(() => parseDiscordConfig({ requireMention: 'yes' }, env)).toThrow(/channels\.discord\.requireMention/);
    expect(() => parseDiscordConfig({ channels: { '123': { requireMention: 1 } } }, env)).toThrow(/channels\.discord\.channels\.123\.requireMention/);
    expect(() => parseDiscordConfig({ bogus: 1 }, env)).toThrow(/channels\.discord/);
    expect(() => parseDiscordConfig({ botTokenEnv: 'MY_DISCORD' }, env)).toThrow(/"channels\.discord\.botTokenEnv".*MY_DISCORD/);
    expect(() => parseDiscordConfig({ editIntervalMs: 10 }, env)).toThrow(/editIntervalMs/);
  });

  it('mention rules: per channel, a thread falls back to its parent', () => {
    const c = parseDiscordConfig({ channels: { '1': { requireMention: false }, '2': { requireMention: true } } }, env);
    expect(mentionRequired(c, '1')).toBe(false);
    expect(mentionRequired(c, '9', '1')).toBe(false);
    expect(mentionRequired(c, '2', '1')).toBe(true);
    expect(mentionRequired(c, '9')).toBe(true);
  });

  it('a thread is its own conversation', () => {
    const channel = baseKey({ guildId: '1', channelId: '2', parentId: null });
    const thread = baseKey({ guildId: '1', channelId: '3', parentId: '2' });
    expect(channel).toBe('discord/1/2/-');
    expect(thread).toBe('discord/1/2/3');
    expect(baseKey({ guildId: null, channelId: '4', parentId: null })).toBe('discord/@dm/4/-');
  });
});
