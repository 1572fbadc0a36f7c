import { randomUUID } from 'node:crypto';
import type { ChannelListener, ListenContext } from '../../src/channel.js';
import { conversationKey } from '../../src/envelope.js';
import { parseJsonObject, sendError, sendJson } from '../../src/http/server.js';
import { BodyTooLargeError } from '../../src/http/server.js';
import type { WebhookChannelConfig } from './config.js';
import { verify } from './signature.js';

/** POST /v1/webhooks/{name}: a signed JSON message in; 202 at once; the reply goes to the callback. */
export class WebhookListener implements ChannelListener {
  constructor(
    private readonly cfg: WebhookChannelConfig,
    private readonly secrets: Map<string, string>,
  ) {}

  async start(ctx: ListenContext): Promise<void> {
    ctx.http.route('POST', '/v1/webhooks/:name', async ({ req, res, params, body }) => {
      const hook = this.cfg.hooks.find((h) => h.name === params.name);
      if (!hook) return sendError(res, 404, `no webhook named ${params.name}`, { code: 'unknown_webhook' });
      let raw: Buffer;
      try {
        raw = await body();
      } catch (err) {
        if (err instanceof BodyTooLargeError) return sendError(res, 413, 'body too large', { code: 'request_too_large' });
        throw err;
      }
      const v = verify(this.secrets.get(hook.name)!, req.headers, raw, this.cfg.replayWindowSeconds);
      if (!v.ok) {
        ctx.log.warn({ hook: hook.name, reason: v.reason }, 'webhook refused');
        return sendError(res, 401, `signature refused: ${v.reason}`, { code: 'bad_signature' });
      }
      let msg: { text?: unknown; sender?: unknown; conversation?: unknown; idempotencyKey?: unknown; callbackUrl?: unknown };
      try {
        msg = parseJsonObject(raw) as typeof msg; // an object: not null, an array or a scalar
      } catch {
        return sendError(res, 400, 'the body must be JSON', { code: 'invalid_json' });
      }
      if (typeof msg.text !== 'string' || !msg.text.trim()) return sendError(res, 400, '"text" is required', { code: 'missing_text' });
      if (msg.callbackUrl !== undefined && !hook.allowRequestCallback) return sendError(res, 400, 'this webhook takes its callback from configuration only', { code: 'callback_not_allowed' });
      const idem = req.headers['idempotency-key'] ?? msg.idempotencyKey;
      const conversation = typeof msg.conversation === 'string' && msg.conversation ? msg.conversation : 'default';
      const accepted = await ctx.ingress.accept(
        {
          channel: 'webhook',
          externalId: `${hook.name}:${typeof idem === 'string' && idem ? idem : randomUUID()}`,
          conversationKey: conversationKey({ channel: 'webhook', workspace: hook.name, chat: conversation }),
          sender: { id: typeof msg.sender === 'string' ? msg.sender : hook.name },
          text: msg.text,
          attachments: [],
          replyTo: { hook: hook.name, ...(typeof msg.callbackUrl === 'string' ? { callbackUrl: msg.callbackUrl } : {}) },
          receivedAt: new Date(),
        },
        hook.agent,
      );
      sendJson(res, 202, { accepted: true, duplicate: accepted.duplicate, conversation, message: accepted.inboxId });
    });
  }

  async close(): Promise<void> {}

  health() {
    return { ok: true };
  }
}
