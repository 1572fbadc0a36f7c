/**
 * Issue #22: each channel folder's README walks a newcomer through the platform setup, and
 * `switchboard init` prints the same parts from code. These keep the two from drifting: what the
 * README tells people to paste is what the channel actually needs.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DISCORD_PERMISSIONS, discordInviteUrl } from '../channels/discord/setup.js';
import { SLACK_BOT_SCOPES, slackManifest } from '../channels/slack/setup.js';
import { DEFAULT_INBOUND_PATH, DEFAULT_STATUS_PATH } from '../channels/sms/config.js';
import { twilioWebhookUrls } from '../channels/sms/setup.js';
import { DEFAULT_INBOUND_PATH as WA_INBOUND_PATH, DEFAULT_STATUS_PATH as WA_STATUS_PATH } from '../channels/whatsapp/config.js';
import { whatsappWebhookUrls } from '../channels/whatsapp/setup.js';
import { packageRoot } from '../kernel/paths.js';

const readme = (channel: string) => readFileSync(join(packageRoot, 'channels', channel, 'README.md'), 'utf8');

describe('channel setup guides', () => {
  it('every chat channel README starts with a step-by-step setup that warns about the default allowlist', () => {
    for (const c of ['slack', 'discord', 'sms', 'email', 'telegram', 'whatsapp']) {
      const text = readme(c);
      expect(text, c).toContain('## Setup, step by step');
      expect(text, c).toMatch(/empty\s+allowlist: it refuses every sender/);
      expect(text, c).toContain('switchboard init');
    }
  });

  it('the Slack README manifest is the one init prints, with every scope the channel uses and connections:write for the app token', () => {
    const block = /```yaml\n((?: {3}.*\n|\n)+?) {3}```/.exec(readme('slack'))![1]!;
    const manifest = block
      .split('\n')
      .map((l) => l.slice(3))
      .join('\n');
    expect(manifest.trim()).toBe(slackManifest({ name: 'Switchboard', mode: 'socket' }).trim());
    for (const s of SLACK_BOT_SCOPES) expect(manifest).toContain(`- ${s}`);
    expect(readme('slack')).toContain('connections:write');
  });

  it('the Discord README invite URL carries exactly the permissions init puts in it', () => {
    const url = /https:\/\/discord\.com\/oauth2\/authorize\S+/.exec(readme('discord'))![0];
    expect(url).toBe(discordInviteUrl(''));
    expect(new URL(url).searchParams.get('permissions')).toBe(DISCORD_PERMISSIONS.toString());
    expect(readme('discord')).toContain('MESSAGE CONTENT INTENT');
  });

  it('the WhatsApp README names the webhook routes the channel mounts, as init prints them', () => {
    const urls = whatsappWebhookUrls('https://bot.example.com/');
    expect(urls).toEqual({
      inbound: `https://bot.example.com${WA_INBOUND_PATH}`,
      status: `https://bot.example.com${WA_STATUS_PATH}`,
    });
    expect(readme('whatsapp')).toContain(`<publicUrl>${WA_INBOUND_PATH}`);
    expect(readme('whatsapp')).toContain(`<publicUrl>${WA_STATUS_PATH}`);
  });

  it('the SMS README names the webhook routes the channel mounts', () => {
    const urls = twilioWebhookUrls('https://bot.example.com/');
    expect(urls).toEqual({ inbound: `https://bot.example.com${DEFAULT_INBOUND_PATH}`, status: `https://bot.example.com${DEFAULT_STATUS_PATH}` });
    expect(readme('sms')).toContain(urls.inbound);
    expect(readme('sms')).toContain(DEFAULT_STATUS_PATH);
  });
});
