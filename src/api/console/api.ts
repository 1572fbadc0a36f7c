import type { ProviderChain } from '../../../providers/chain.js';
import { visibleCall } from '../../approvals/render.js';
import type { CoreInfra } from '../../core-infra.js';
import { conversationTopic } from '../../event-publisher.js';
import type { ApiKeyAuth } from '../../http/auth.js';
import { sendError } from '../../http/errors.js';
import { type HttpServer, sendJson } from '../../http/server.js';
import { firstSighting } from '../../http/turn-order.js';
import { rulesJson } from '../approvals-api.js';
import { CONSOLE_HTML } from './page.js';

/**
 * The operator console: a page served by the gateway (GET /console) and the two
 * endpoints it reads — a state snapshot it polls (pending approvals with their
 * arguments made visible, "always allow" rules, health...), and a live stream of
 * one conversation's turn events. Everything but the page needs an operator key.
 * The page answers approvals and deletes rules through the operator HTTP API.
 */
export function registerConsole(server: HttpServer, deps: { auth: ApiKeyAuth; infra: CoreInfra; chain: ProviderChain | null }): void {
  const { infra } = deps;
  server.route('GET', '/console', ({ res }) => {
    res.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'content-security-policy': "default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'",
    });
    res.end(CONSOLE_HTML);
  });

  server.route('GET', '/v1/console/state', async ({ req, res }) => {
    if (!deps.auth.authenticate(req)?.operator) return sendError(res, 401, 'The console needs an operator key.', { code: 'invalid_api_key' });
    const [conversations, latencies, queue, approvals, slots, pairing, rules] = await Promise.all([
      infra.store.repos.console.recentConversations(30),
      infra.store.repos.console.turnLatencies(60),
      infra.queue.counts().catch(() => null),
      infra.approvals.pending(),
      deps.chain ? deps.chain.health().catch(() => []) : Promise.resolve([]),
      infra.access.list('pending'),
      infra.approvals.rules().then((r) => rulesJson(r, infra.store)),
    ]);
    sendJson(res, 200, {
      conversations: conversations.map((c) => ({
        id: c.id,
        key: c.key,
        channel: c.channel,
        updatedAt: new Date(c.updatedAt).toISOString(),
        status: c.status,
        turns: c.turns,
      })),
      latencies: latencies.reverse().map((l) => Math.round(Number(l.ms))),
      queue,
      approvals: approvals.map((a) => ({
        code: a.code,
        tool: a.tool,
        tier: a.tier,
        arguments: a.args,
        conversation: a.conversationId,
        expiresAt: new Date(a.expiresAt).toISOString(),
        alwaysPermitted: a.rulePermitted,
        reasons: a.reasons,
        shown: visibleCall(a.args),
      })),
      rules,
      slots,
      pairing: pairing.filter((p) => p.expiresAt && new Date(p.expiresAt) > new Date()).map((p) => ({ channel: p.channel, sender: p.sender, code: p.code })),
    });
  });

  // Server-sent events of one conversation's turns, for watching it live.
  server.route('GET', '/v1/console/conversations/:id/events', async ({ req, res, params, url }) => {
    const key = url.searchParams.get('key');
    if (!deps.auth.authenticate(req)?.operator && !(key && isOperatorKey(deps.auth, key)))
      return sendError(res, 401, 'The console needs an operator key.', { code: 'invalid_api_key' });
    const conv = await infra.store.conversation(params.id!);
    if (!conv) return sendError(res, 404, 'no such conversation', { code: 'not_found' });
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
    res.write(': live\n\n');
    // A write the Redis client resent after a reconnect is shown once.
    const fresh = firstSighting();
    const sub = await infra.bus.subscribe(conversationTopic(conv.key), (e) => fresh(e) && res.write(`data: ${JSON.stringify(e)}\n\n`));
    const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
    res.on('close', () => {
      clearInterval(ping);
      sub.close();
    });
  });
}

/** EventSource cannot send headers: the page passes the key as a query parameter on this one stream. */
function isOperatorKey(auth: ApiKeyAuth, key: string): boolean {
  return auth.authenticate({ headers: { authorization: `Bearer ${key}` } } as never)?.operator === true;
}
