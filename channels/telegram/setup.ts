import type { ChannelSetup } from '../../src/channel/index.js';

const HTTPS_BASE = /^https:\/\/[^\s/]+(\/[^\s]*[^/\s])?$/;

export const setup: ChannelSetup = {
  questions: [
    {
      flag: 'telegram-public-url',
      prompt: "Telegram: the gateway's public https base URL for a webhook (blank: long polling, no public URL needed)",
      default: '',
      validate: (v) => (HTTPS_BASE.test(v) ? undefined : 'expected an https URL without a trailing slash, such as https://bot.example.com'),
    },
  ],
  config: (a) => (a['telegram-public-url'] ? { publicUrl: a['telegram-public-url'] } : {}),
  secrets: (a) => [
    { name: 'TELEGRAM_BOT_TOKEN', hint: 'Telegram: the bot token @BotFather gives with /newbot (123456:ABC…)' },
    ...(a['telegram-public-url']
      ? [{ name: 'TELEGRAM_WEBHOOK_SECRET', hint: 'Telegram: a random secret of 16-256 characters (A-Z a-z 0-9 _ -), e.g. `openssl rand -hex 32`' }]
      : []),
  ],
  guide(a) {
    const url = a['telegram-public-url'];
    return [
      'Telegram',
      '1. In Telegram, talk to @BotFather: /newbot, pick a name and a username ending in "bot"; put the token in TELEGRAM_BOT_TOKEN in .env.',
      url
        ? `2. Webhook mode: Telegram will POST to ${url}/v1/channels/telegram/webhook (set at start, with TELEGRAM_WEBHOOK_SECRET as its secret token).`
        : '2. Long polling: nothing to expose; the gateway asks Telegram for updates (one ingress process polls, the others stand by).',
      '3. Groups: add the bot to the group. With privacy mode on (the default) it sees only messages that mention it, reply to it,',
      '   or are commands; that is all it answers anyway. For requireMention: false turn privacy off (@BotFather /setprivacy > Disable),',
      '   then remove and re-add the bot to the group. Forum topics are separate conversations.',
      '4. Your user id (message @userinfobot): add it to access.telegram.allow and approvals.operators.telegram, or answer the',
      '   pairing code with `switchboard access approve CODE`.',
      '5. Start the gateway, then send the bot a private message.',
    ].join('\n');
  },
};
