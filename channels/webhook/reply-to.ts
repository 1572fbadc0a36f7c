import { optionalString, ReplyToError, replyToObject, stringField } from '../../src/channel/index.js';

/** Which hook a message came in on, and the callback the request named (when the hook allows one). */
export interface WebhookReplyTo {
  hook: string;
  callbackUrl?: string;
}

/** The stored reply target of a webhook message (listen.ts writes it), or null when the row has none. */
export function parseWebhookReplyTo(raw: unknown): WebhookReplyTo | null {
  if (raw === null || raw === undefined) return null;
  const o = replyToObject('webhook', raw);
  const hook = stringField('webhook', o, 'hook', 64);
  if (!/^[a-zA-Z0-9_-]+$/.test(hook)) throw new ReplyToError('webhook', '"hook" is not a hook name');
  const callbackUrl = optionalString('webhook', o, 'callbackUrl', 2_048);
  if (callbackUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(callbackUrl);
    } catch {
      throw new ReplyToError('webhook', '"callbackUrl" is not a URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ReplyToError('webhook', '"callbackUrl" must be http or https');
  }
  return { hook, ...(callbackUrl !== undefined ? { callbackUrl } : {}) };
}
