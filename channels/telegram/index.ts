import type { ChannelPlugin } from '../../src/channel/index.js';
import { parseTelegramConfig, type TelegramSettings } from './config.js';
import { TelegramDeliverer } from './deliver.js';
import { TelegramListener } from './listen.js';
import { parseTelegramReplyTo, type TelegramReplyTo } from './reply-to.js';

/**
 * Telegram through grammY's Bot API client: long polling by default, a webhook with a secret token
 * when publicUrl is set; private chats, groups when addressed, forum topics as threads; replies
 * streamed by editing, in HTML that falls back to plain text; approval buttons for operators.
 * Configuration: channels.telegram (config.ts); the token from TELEGRAM_BOT_TOKEN (botTokenEnv).
 */
export const plugin: ChannelPlugin<TelegramSettings, TelegramReplyTo | null> = {
  name: 'telegram',
  parseConfig: parseTelegramConfig,
  parseReplyTo: parseTelegramReplyTo,
  listener: (cfg) => new TelegramListener(cfg),
  deliverer: (cfg) => new TelegramDeliverer(cfg),
  // Loaded only by doctor --probe.
  probe: async (cfg) => (await import('./probe.js')).probeTelegram(cfg),
};
