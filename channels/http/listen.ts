import { type ChannelListener, type ListenContext, sendError, sendJson } from '../../src/channel/index.js';
import { chatCompletions } from './chat-completions.js';
import type { HttpChannelConfig } from './config.js';
import { mountResponses } from './responses.js';

/** POST /v1/chat/completions, the Responses API (/v1/responses) and GET /v1/models on the gateway's HTTP server. */
export class HttpListener implements ChannelListener {
  private started = false;

  constructor(private readonly cfg: HttpChannelConfig) {}

  async start(ctx: ListenContext): Promise<void> {
    ctx.mount({ method: 'POST', path: '/v1/chat/completions', handler: (rc) => chatCompletions(this.cfg, ctx, rc) });
    mountResponses(this.cfg, ctx);
    ctx.mount({
      method: 'GET',
      path: '/v1/models',
      handler: async ({ req, res }) => {
        const a = await ctx.authenticate(req);
        if (!a.ok) return sendError(res, 401, 'Incorrect API key provided.', { code: 'invalid_api_key' });
        sendJson(res, 200, {
          object: 'list',
          data: Object.entries(this.cfg.agents).map(([id, agent]) => ({
            id,
            object: 'model',
            created: 0,
            owned_by: 'switchboard',
            description: agent.description,
          })),
        });
      },
    });
    this.started = true;
  }

  async close(): Promise<void> {
    this.started = false;
  }

  health(): { ok: boolean; message?: string } {
    return this.started ? { ok: true } : { ok: false, message: 'not started' };
  }
}
