import { createHash } from 'node:crypto';
import { conversationKey } from '../../kernel/envelope.js';
import { SIGNATURE_HEADER, verify } from '../../kernel/hmac-signature.js';
import { BodyTooLargeError, type ChannelListener, type ListenContext, parseJsonObject, sendError, sendJson } from '../../src/channel/index.js';
import type { WebhookChannelConfig } from './config.js';

/** POST /v1/webhooks/{name}: a signed JSON message in; 202 at once; the reply goes to the callback. */
export class WebhookListener implements ChannelListener {
  constructor(
    private readonly cfg: WebhookChannelConfig,
    private readonly secrets: Map<string, string>,
  ) {}

  async start(ctx: ListenContext): Promise<void> {
    ctx.mount({
      method: 'POST',
      path: '/v1/webhooks/:name',
      handler: async ({ req, res, params, body }) => {
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
        if (msg.callbackUrl !== undefined && !hook.allowRequestCallback)
          return sendError(res, 400, 'this webhook takes its callback from configuration only', { code: 'callback_not_allowed' });
        const conversation = typeof msg.conversation === 'string' && msg.conversation ? msg.conversation : 'default';
        // A signature is accepted once: the same signed request again (whatever unsigned
        // headers come with it) is a duplicate for as long as its timestamp is in the window.
        const signature = createHash('sha256').update(String(req.headers[SIGNATURE_HEADER])).digest('hex');
        const seen = await ctx.leases.tryAcquire(`webhook-signature:${hook.name}:${signature}`, 2 * this.cfg.replayWindowSeconds * 1000);
        if (!seen) {
          ctx.log.warn({ hook: hook.name }, 'webhook signature seen before: answered as a duplicate');
          return sendJson(res, 202, { accepted: true, duplicate: true, conversation, replay: true });
        }
        // The signed body's key wins over the (unsigned) header; with neither, the signature is the message's identity.
        const bodyKey = typeof msg.idempotencyKey === 'string' && msg.idempotencyKey ? msg.idempotencyKey : undefined;
        const header = req.headers['idempotency-key'];
        const headerKey = typeof header === 'string' && header ? header : undefined;
        const idem = bodyKey ?? headerKey ?? `sig:${signature}`;
        let outcome;
        try {
          outcome = await ctx.receive(
            {
              channel: 'webhook',
              externalId: `${hook.name}:${idem}`,
              conversationKey: conversationKey({ channel: 'webhook', workspace: hook.name, chat: conversation }),
              // Senders are the hook's own: a caller naming another channel's user (a Slack id, a phone number) is not that user.
              sender: { id: typeof msg.sender === 'string' && msg.sender ? `${hook.name}:${msg.sender}` : hook.name },
              text: msg.text,
              attachments: [],
              replyTo: { hook: hook.name, ...(typeof msg.callbackUrl === 'string' ? { callbackUrl: msg.callbackUrl } : {}) },
              receivedAt: new Date(),
            },
            // Signed by the hook's secret: no access policy; the text is the agent's, commands included.
            { authenticated: true, agent: hook.agent, commands: false, approvalAnswers: false },
          );
        } catch (err) {
          // Nothing was accepted: the sender may retry with the same signature.
          await seen
            .release()
            .catch((e: unknown) =>
              ctx.log.warn({ err: e, hook: hook.name }, 'could not release the signature lock; a retry within the replay window is answered as a duplicate'),
            );
          throw err;
        }
        if (outcome.kind !== 'accepted') {
          await seen
            .release()
            .catch((e: unknown) =>
              ctx.log.warn({ err: e, hook: hook.name }, 'could not release the signature lock; a retry within the replay window is answered as a duplicate'),
            );
          if (outcome.kind === 'refused' && outcome.reason === 'conversation_full')
            return sendError(res, 429, outcome.reply ?? 'conversation full', { code: 'conversation_full' });
          if (outcome.kind === 'refused')
            return sendError(res, 429, outcome.reply ?? 'refused', { code: outcome.reason === 'rate_limit' ? 'rate_limit_exceeded' : 'refused' });
          return sendJson(res, 200, { accepted: false, conversation, reply: outcome.reply });
        }
        sendJson(res, 202, {
          accepted: true,
          duplicate: outcome.duplicate,
          conversation,
          message: outcome.inboxId,
          ...(outcome.notice ? { notice: outcome.notice } : {}),
        });
      },
    });
  }

  async close(): Promise<void> {}

  health() {
    return { ok: true };
  }
}
