import type { ServerResponse } from 'node:http';
import type { Topic } from '../../../adapters/bus/port.js';
import { conversationKey } from '../../../kernel/envelope.js';
import { maskConfig } from '../../config.js';
import type { CoreInfra } from '../../core-infra.js';
import { conversationTopic } from '../../event-publisher.js';
import { HANDOFF_TOPIC } from '../../handoffs/service.js';
import type { ApiKeyAuth, Principal } from '../../http/auth.js';
import { sendError } from '../../http/errors.js';
import { type HttpServer, type RequestContext, sendJson } from '../../http/server.js';
import { firstSighting } from '../../http/turn-order.js';
import { CONSOLE_HTML } from './page.js';
import { type ConsoleDeps, consoleState } from './state.js';

/**
 * The operator console: a page served by the gateway (GET /console) and the
 * /v1/console/* endpoints it reads — a state snapshot it polls, live streams of
 * turn events, and the masked configuration. Every endpoint but the page needs an
 * operator key in the Authorization header (never in the URL: the page reads the
 * streams with fetch, not EventSource). Everything else the page does goes
 * through the operator HTTP API (approvals, rules, access, webhooks, memory).
 */
export function registerConsole(server: HttpServer, deps: ConsoleDeps): void {
  const { infra } = deps;
  server.route('GET', '/console', ({ res }) => {
    res.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'content-security-policy': "default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'",
      'referrer-policy': 'no-referrer',
    });
    res.end(CONSOLE_HTML);
  });

  server.route('GET', '/v1/console/state', async (ctx) => {
    if (!operator(deps.auth, ctx)) return;
    sendJson(ctx.res, 200, await consoleState(deps));
  });

  server.route('GET', '/v1/console/config', async (ctx) => {
    if (!operator(deps.auth, ctx)) return;
    sendJson(ctx.res, 200, { config: maskConfig(deps.config) });
  });

  // Server-sent events of one conversation's turns (by id), for watching it live.
  server.route('GET', '/v1/console/conversations/:id/events', async (ctx) => {
    if (!operator(deps.auth, ctx)) return;
    const conv = await infra.store.conversation(ctx.params.id!);
    if (!conv) return sendError(ctx.res, 404, 'no such conversation', { code: 'not_found' });
    await stream(ctx.res, infra, conv.key);
  });

  // Human takeover's live view: the messages of taken-over conversations and changes of state, as they happen.
  server.route('GET', '/v1/console/handoffs/events', async (ctx) => {
    if (!operator(deps.auth, ctx)) return;
    await streamTopic(ctx.res, infra, HANDOFF_TOPIC, () => true);
  });

  // The console's web chat: the events of the operator's own http conversation by name, before
  // it exists and after its answer parks, so a resumed turn's answer reaches the page too.
  server.route('GET', '/v1/console/chat/:name/events', async (ctx) => {
    const p = operator(deps.auth, ctx);
    if (!p) return;
    await stream(ctx.res, infra, conversationKey({ channel: 'http', workspace: p.id, chat: ctx.params.name! }));
  });
}

/** The operator principal, or null after answering 401 (no valid key) or 403 (a user key). */
function operator(auth: ApiKeyAuth, ctx: RequestContext): Principal | null {
  const p = auth.authenticate(ctx.req);
  if (!p) {
    sendError(ctx.res, 401, 'The console needs an operator key.', { code: 'invalid_api_key' });
    return null;
  }
  if (!p.operator) {
    sendError(ctx.res, 403, 'The console needs an operator key.', { type: 'permission_error', code: 'not_operator' });
    return null;
  }
  return p;
}

function stream(res: ServerResponse, infra: CoreInfra, key: string): Promise<void> {
  // A write the Redis client resent after a reconnect is shown once.
  const fresh = firstSighting();
  return streamTopic(res, infra, conversationTopic(key), fresh);
}

async function streamTopic<T>(res: ServerResponse, infra: CoreInfra, topic: Topic<T>, keep: (e: T) => boolean): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const sub = await infra.bus.subscribe(topic, (e) => keep(e) && res.write(`data: ${JSON.stringify(e)}\n\n`));
  // Written once subscribed: a client that waits for it misses no event.
  res.write(': live\n\n');
  const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
  res.on('close', () => {
    clearInterval(ping);
    sub.close();
  });
}
