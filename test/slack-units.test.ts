/** The Slack channel's pure parts: formatting, splitting, signatures, event classification, approval blocks. */
import { describe, expect, it } from 'vitest';
import { approvalBlocks, decidedBlocks } from '../channels/slack/approvals.js';
import { parseSlackConfig } from '../channels/slack/config.js';
import { markdownToMrkdwn, slackToPlain } from '../channels/slack/format.js';
import { workspaceOfEnvelope } from '../channels/slack/inbound.js';
import { classify } from '../channels/slack/normalize.js';
import { signSlackRequest, verifySlackSignature } from '../channels/slack/signature.js';
import { splitMessage } from '../channels/slack/split.js';
import { ConfigError } from '../src/config.js';

const bot = { userId: 'UBOT', botId: 'BBOT', teamId: 'T1' };

describe('slack formatting', () => {
  it('converts Markdown to mrkdwn, leaving code alone but escaped', () => {
    expect(markdownToMrkdwn('**bold**, *it*, ~~gone~~, `a<b`')).toBe('*bold*, _it_, ~gone~, `a&lt;b`');
    expect(markdownToMrkdwn('# Title\n- one\n> q & a')).toBe('*Title*\n• one\n> q &amp; a');
    expect(markdownToMrkdwn('[site](https://x.io/a_b?c=1&d=2) and https://y.io/a_b_c')).toBe('<https://x.io/a_b?c=1&amp;d=2|site> and https://y.io/a_b_c');
    expect(markdownToMrkdwn('```ts\nconst x = **1** < 2;\n```')).toBe('```\nconst x = **1** &lt; 2;\n```');
  });

  it('reads Slack text as plain text without the bot mention', () => {
    expect(slackToPlain('<@UBOT> hi <@U1|bob>, see <#C1|general> and <https://a.io|A> &lt;3 &amp; <!here>', 'UBOT')).toBe(
      'hi @bob, see #general and A (https://a.io) <3 & @here',
    );
  });

  it('splits long replies at boundaries, re-opening code fences, and never rewrites a finished part', () => {
    const text = Array.from({ length: 150 }, (_, i) => `word${i}`).join(' ') + '\n```\n' + 'line\n'.repeat(120) + '```\ntail';
    const parts = splitMessage(text, 300);
    expect(parts.length).toBeGreaterThan(4);
    for (const p of parts) {
      expect(p.length).toBeLessThanOrEqual(300);
      expect((p.match(/(^|\n)```/g) ?? []).length % 2).toBe(0);
    }
    expect(parts.join(' ').replace(/```\n/g, '').replace(/\n```/g, '')).toContain('word149');
    let prev: string[] = [];
    for (let n = 1; n <= text.length; n += 13) {
      const now = splitMessage(text.slice(0, n), 300);
      for (let i = 0; i < prev.length - 1; i++) expect(now[i]).toBe(prev[i]);
      prev = now;
    }
  });
});

describe('slack signatures', () => {
  const secret = 'shh';
  const body = '{"type":"event_callback"}';
  const now = 1_800_000_000_000;
  const ts = String(now / 1000);
  const headers = (sig: string, t = ts) => ({ 'x-slack-request-timestamp': t, 'x-slack-signature': sig });

  it('accepts the right signature over the raw body within five minutes', () => {
    expect(verifySlackSignature(secret, body, headers(signSlackRequest(secret, ts, body)), now)).toEqual({ ok: true });
    const old = String(now / 1000 - 299);
    expect(verifySlackSignature(secret, Buffer.from(body), headers(signSlackRequest(secret, old, body), old), now).ok).toBe(true);
  });

  it('refuses forged, tampered, stale, future and unsigned requests', () => {
    expect(verifySlackSignature(secret, body, headers(signSlackRequest('other', ts, body)), now)).toMatchObject({ ok: false, reason: 'signature mismatch' });
    expect(verifySlackSignature(secret, body + ' ', headers(signSlackRequest(secret, ts, body)), now).ok).toBe(false);
    for (const t of [String(now / 1000 - 301), String(now / 1000 + 301)]) {
      expect(verifySlackSignature(secret, body, headers(signSlackRequest(secret, t, body), t), now)).toMatchObject({ ok: false, reason: /window/ });
    }
    expect(verifySlackSignature(secret, body, {}, now)).toMatchObject({ ok: false });
    expect(verifySlackSignature(secret, body, headers('v1=abc'), now).ok).toBe(false);
  });
});

describe('slack event classification', () => {
  const msg = (p: Record<string, unknown>) => ({
    type: 'message',
    user: 'U1',
    ts: '100.1',
    channel: 'C1',
    channel_type: 'channel',
    text: 'hi',
    client_msg_id: 'm-1',
    ...p,
  });

  it('takes DMs and mentions; a mention starts a thread, which is the conversation', () => {
    const dm = classify(msg({ channel: 'D1', channel_type: 'im' }), 'T1', bot);
    expect(dm).toMatchObject({ kind: 'take', dm: true, externalId: 'm-1', replyTo: { channel: 'D1', ts: '100.1', dm: true } });
    expect((dm as { thread?: string }).thread).toBeUndefined();
    const mention = classify(msg({ text: '<@UBOT> help' }), 'T1', bot);
    expect(mention).toMatchObject({
      kind: 'take',
      mention: true,
      thread: '100.1',
      text: 'help',
      needsThread: false,
      replyTo: { thread_ts: '100.1', team: 'T1', user: 'U1' },
    });
    const inThread = classify(msg({ text: '<@UBOT> more', ts: '105.5', thread_ts: '100.1', client_msg_id: undefined }), 'T1', bot);
    expect(inThread).toMatchObject({ kind: 'take', thread: '100.1', externalId: 'C1:105.5' });
  });

  it('thread replies without a mention need the bot in the thread; channel chatter is taken for the manners to decide', () => {
    expect(classify(msg({ ts: '101.0', thread_ts: '100.1' }), 'T1', bot)).toMatchObject({ kind: 'take', needsThread: true });
    expect(classify(msg({}), 'T1', bot)).toMatchObject({ kind: 'take', mention: false, needsThread: false, mentionsOthers: false });
    expect(classify(msg({ text: '<@U2> can you look?' }), 'T1', bot)).toMatchObject({ kind: 'take', mentionsOthers: true });
    expect(classify(msg({ text: '<!subteam^S1|@ops> can you look?' }), 'T1', bot)).toMatchObject({ kind: 'take', mentionsOthers: true });
    expect(classify(msg({ text: '<@UBOT> ask <@U2>' }), 'T1', bot)).toMatchObject({ kind: 'take', mention: true, mentionsOthers: true });
  });

  it("ignores the bot's own messages, joins and deletions; other bots' are taken as from a bot", () => {
    expect(classify(msg({ user: 'UBOT', channel_type: 'im', channel: 'D1' }), 'T1', bot).kind).toBe('ignore');
    expect(classify(msg({ bot_id: 'B9', channel_type: 'im', channel: 'D1' }), 'T1', bot)).toMatchObject({ kind: 'take', fromBot: ['B9', 'U1'] });
    expect(
      classify({ type: 'message', subtype: 'bot_message', bot_id: 'B8', text: 'beep', ts: '1.0', channel: 'C1', channel_type: 'channel' }, 'T1', bot),
    ).toMatchObject({
      kind: 'take',
      user: 'B8',
      fromBot: ['B8'],
    });
    expect(classify(msg({ subtype: 'channel_join', text: '<@UBOT>' }), 'T1', bot).kind).toBe('ignore');
    expect(classify({ type: 'message', subtype: 'message_deleted', channel: 'D1', channel_type: 'im' }, 'T1', bot).kind).toBe('ignore');
  });

  it("ignores Slackbot and system subtypes; in a shared channel the envelope's team keys the thread, the sender keeps theirs", () => {
    expect(classify(msg({ user: 'USLACKBOT', channel: 'D1', channel_type: 'im' }), 'T1', bot)).toMatchObject({ kind: 'ignore', reason: 'slackbot' });
    for (const subtype of ['channel_join', 'channel_archive', 'channel_topic', 'pinned_item'])
      expect(classify(msg({ subtype, text: '<@UBOT> x' }), 'T1', bot).kind).toBe('ignore');
    const partner = classify(msg({ text: '<@UBOT> hi', team: 'T2', user_team: 'T2', source_team: 'T2' }), 'T1', bot);
    expect(partner).toMatchObject({ kind: 'take', team: 'T1', senderTeam: 'T2', replyTo: { team: 'T2', user: 'U1' } });
    expect(classify(msg({ text: '<@UBOT> hi', team: 'T1' }), 'T1', bot)).toMatchObject({ team: 'T1', senderTeam: 'T1' });
    // The workspace comes from the installation the event is delivered to (an org-wide install: its enterprise).
    expect(workspaceOfEnvelope({ team_id: 'T1', authorizations: [{ team_id: 'T1', enterprise_id: null }] })).toBe('T1');
    expect(workspaceOfEnvelope({ team_id: 'T3', authorizations: [{ team_id: null, enterprise_id: 'E1' }] })).toBe('E1');
    expect(workspaceOfEnvelope({ team_id: 'T3' })).toBe('T3');
  });

  it('an edit is the original message (same id); an edit that adds a mention is taken', () => {
    const edit = classify(
      {
        type: 'message',
        subtype: 'message_changed',
        channel: 'C1',
        channel_type: 'channel',
        message: msg({ text: '<@UBOT> now asking' }),
        previous_message: msg({ text: 'now asking' }),
      },
      'T1',
      bot,
    );
    expect(edit).toMatchObject({ kind: 'take', edited: true, externalId: 'm-1', text: 'now asking' });
    const unfurl = classify(
      { type: 'message', subtype: 'message_changed', channel: 'D1', channel_type: 'im', message: msg({}), previous_message: msg({}) },
      'T1',
      bot,
    );
    expect(unfurl.kind).toBe('ignore');
  });

  it('carries files as attachment metadata', () => {
    const c = classify(
      msg({
        channel: 'D1',
        channel_type: 'im',
        text: '',
        subtype: 'file_share',
        files: [{ name: 'a.png', mimetype: 'image/png', size: 5, url_private: 'https://f/a.png' }],
      }),
      'T1',
      bot,
    );
    expect(c).toMatchObject({ kind: 'take', attachments: [{ name: 'a.png', contentType: 'image/png', size: 5, url: 'https://f/a.png' }] });
  });
});

describe('slack approval blocks and config', () => {
  const info = {
    code: 'K7Q4P',
    tool: 'shell_exec',
    tier: 'caution',
    expiresAt: new Date(Date.now() + 60_000).toISOString(),
    args: { command: 'echo <hi>' },
    reasons: ['writes files'],
  };

  it('offers Always allow only when a rule is possible and the tier is not dangerous; buttons carry the code', () => {
    const notMatchable = approvalBlocks(info).blocks.find((b) => b.type === 'actions') as { elements: unknown[] };
    expect(notMatchable.elements).toHaveLength(2); // no alwaysPermitted: no Always button
    const { blocks, text } = approvalBlocks({ ...info, alwaysPermitted: true });
    const actions = blocks.find((b) => b.type === 'actions') as { elements: Array<{ action_id: string; value: string }> };
    expect(actions.elements.map((e) => [e.action_id, e.value])).toEqual([
      ['sb_approve', 'K7Q4P'],
      ['sb_deny', 'K7Q4P'],
      ['sb_always', 'K7Q4P'],
    ]);
    expect(JSON.stringify(blocks)).toContain('echo &lt;hi&gt;');
    expect(text).toContain('K7Q4P');
    const danger = approvalBlocks({ ...info, tier: 'dangerous', alwaysPermitted: false }).blocks.find((b) => b.type === 'actions') as { elements: unknown[] };
    expect(danger.elements).toHaveLength(2);
    const decided = decidedBlocks(blocks, '*Approved*', 'slack:UOP', new Date(0));
    expect(decided.some((b) => b.type === 'actions')).toBe(false);
    expect(JSON.stringify(decided)).toContain('*Approved* by <@UOP> <!date^0^');
  });

  it('validates channels.slack and names the key', () => {
    const env = { SLACK_BOT_TOKEN: 'xoxb-1' };
    expect(parseSlackConfig({}, env)).toMatchObject({ mode: 'socket', botToken: 'xoxb-1', streaming: 'native', updateIntervalMs: 1000 });
    expect(() => parseSlackConfig({ mode: 'webhook' }, env)).toThrow(/invalid configuration at "channels\.slack\.mode"/);
    expect(() => parseSlackConfig({ updateIntervalMs: 5 }, env)).toThrow(/channels\.slack\.updateIntervalMs/);
    expect(() => parseSlackConfig({ nope: 1 }, env)).toThrow(ConfigError);
    expect(() => parseSlackConfig({}, {})).toThrow(/channels\.slack\.botTokenEnv.*SLACK_BOT_TOKEN/);
  });
});
