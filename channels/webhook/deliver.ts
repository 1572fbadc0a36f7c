import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { signedHeaders } from '../../kernel/hmac-signature.js';
import type { TurnEvent } from '../../kernel/turn-events.js';
import {
  type ChannelDeliverer,
  ChannelDeliveryError,
  type DeliverContext,
  ReplyBuffer,
  safeFetch,
  type TurnDelivery,
  type TurnTarget,
  withApprovalsText,
} from '../../src/channel/index.js';
import type { WebhookChannelConfig } from './config.js';
import type { WebhookReplyTo } from './reply-to.js';

/**
 * Replies go to the webhook's callback URL (from configuration; from the
 * request only where allowed), through the SSRF guard, signed, retried with
 * backoff, and recorded on the turn's delivery row; a callback that keeps failing
 * is the delivery queue's (src/delivery-retries.ts) to retry or dead-letter.
 */
export class WebhookDeliverer implements ChannelDeliverer<WebhookReplyTo | null> {
  constructor(
    private readonly cfg: WebhookChannelConfig,
    private readonly secrets: Map<string, string>,
  ) {}

  open(target: TurnTarget<WebhookReplyTo | null>, ctx: DeliverContext): TurnDelivery {
    const replyTo = target.replyTo;
    const hook = this.cfg.hooks.find((h) => h.name === replyTo?.hook);
    const reply = new ReplyBuffer();
    return {
      event: (e: TurnEvent) => {
        reply.push(e);
      },
      close: async () => {
        if (!hook) return;
        const url = (hook.allowRequestCallback && replyTo?.callbackUrl) || hook.callbackUrl;
        if (!url) return;
        // The requests as text for a receiver that relays the text, and as codes in `approvals`.
        const text = withApprovalsText(reply.text, reply.approvals);
        const finishReason = reply.finishReason ?? (reply.parked ? 'approval_pending' : 'stop');
        const body = JSON.stringify({
          conversation: target.conversation.key,
          turn: target.turnId,
          text,
          finishReason,
          approvals: reply.approvals.map((a) => `approval:${a.code}`),
        });
        await deliver(url, body, this.secrets.get(hook.name)!, hook.allowCallbackCidrs, this.cfg, ctx, target, ctx.log);
      },
    };
  }
}

async function deliver(
  url: string,
  body: string,
  secret: string,
  allowCidrs: string[],
  cfg: WebhookChannelConfig,
  ctx: DeliverContext,
  target: TurnTarget,
  log: Logger,
): Promise<void> {
  // Recorded by (turn, url + hash of the body): a retried attempt that says the same does not call
  // back twice, while a turn resumed after an approval (its parked callback already delivered) says
  // something new and calls back again.
  const key = `${url}#${createHash('sha256').update(body).digest('hex').slice(0, 16)}`;
  const prior = await ctx.deliveries.get(target.turnId, 'webhook', key);
  if (prior?.state === 'delivered') return;
  let lastError = '';
  let retryable = true;
  for (let attempt = 1; attempt <= cfg.callbackAttempts; attempt++) {
    try {
      const res = await safeFetch(url, { method: 'POST', headers: signedHeaders(secret, body), body, allowCidrs, timeoutMs: 10_000, maxRedirects: 0 });
      if (res.status >= 200 && res.status < 300) {
        await ctx.deliveries.record(target.turnId, 'webhook', key, { state: 'delivered', body: `HTTP ${res.status} after ${attempt} attempt(s)` });
        return;
      }
      lastError = `HTTP ${res.status}`;
      if (res.status < 500 && res.status !== 429) {
        retryable = false; // the receiver refused it: retrying will not help
        break;
      }
    } catch (err) {
      lastError = (err as Error).message;
      if ((err as Error).name === 'SsrfBlockedError') {
        retryable = false;
        break;
      }
    }
    await new Promise((r) => setTimeout(r, cfg.callbackBackoffMs * 2 ** (attempt - 1)));
  }
  log.warn({ url, turn: target.turnId, error: lastError }, 'webhook callback failed');
  await ctx.deliveries.record(target.turnId, 'webhook', key, { state: 'failed', body: lastError });
  // The delivery queue takes it from here: retried later (5xx, 429, unreachable) or dead-lettered at once (refused),
  // so the reply is listed for the operator and a scheduled run reads undelivered, never delivered.
  throw new ChannelDeliveryError(`webhook callback failed: ${lastError}`, { retryable, platformCode: lastError });
}
