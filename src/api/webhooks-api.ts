import type { WebhookRepository } from '../../adapters/store/ports/webhooks.js';
import type { ApiKeyAuth } from '../http/auth.js';
import { sendError } from '../http/errors.js';
import { type HttpServer, sendJson } from '../http/server.js';
import { EVENT_TYPES } from '../webhooks/events.js';

/** Operators manage event subscribers and see dead letters (what `switchboard webhooks` talks to). */
export function registerWebhookApi(server: HttpServer, auth: ApiKeyAuth, store: WebhookRepository): void {
  const operator = (req: Parameters<ApiKeyAuth['authenticate']>[0]) => auth.authenticate(req)?.operator === true;
  server.route('GET', '/v1/events/subscribers', async ({ req, res }) => {
    if (!operator(req)) return sendError(res, 403, 'Webhook subscribers need an operator key.', { type: 'permission_error', code: 'not_operator' });
    sendJson(res, 200, { object: 'list', data: (await store.subscribers()).map((s) => ({ id: s.id, url: s.url, secretEnv: s.secretEnv, events: s.events })) });
  });
  server.route('POST', '/v1/events/subscribers', async ({ req, res, json }) => {
    if (!operator(req)) return sendError(res, 403, 'Webhook subscribers need an operator key.', { type: 'permission_error', code: 'not_operator' });
    // A bad body is a 400 (415, 413), answered by the router.
    const b: { id?: unknown; url?: unknown; secretEnv?: unknown; events?: unknown } = await json({ hint: '{"id", "url", "secretEnv", "events"}' });
    if (typeof b.id !== 'string' || !/^[a-zA-Z0-9_-]+$/.test(b.id))
      return sendError(res, 400, '"id" must be letters, digits, _ and -.', { param: 'id', code: 'invalid_value' });
    if (typeof b.url !== 'string' || !/^https?:\/\//.test(b.url))
      return sendError(res, 400, '"url" must be an http(s) URL.', { param: 'url', code: 'invalid_value' });
    if (typeof b.secretEnv !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(b.secretEnv))
      return sendError(res, 400, '"secretEnv" must name the environment variable holding the signing secret.', { param: 'secretEnv', code: 'invalid_value' });
    const events = Array.isArray(b.events) ? b.events.filter((e): e is string => typeof e === 'string') : [];
    const unknown = events.filter((e) => e !== '*' && !(EVENT_TYPES as readonly string[]).includes(e));
    if (!events.length || unknown.length)
      return sendError(res, 400, `"events" must list some of ${EVENT_TYPES.join(', ')} (or *).`, { param: 'events', code: 'invalid_value' });
    await store.addSubscriber({ id: b.id, url: b.url, secretEnv: b.secretEnv, events });
    sendJson(res, 201, { id: b.id, url: b.url, events });
  });
  server.route('GET', '/v1/events/dead-letters', async ({ req, res }) => {
    if (!operator(req)) return sendError(res, 403, 'Dead letters need an operator key.', { type: 'permission_error', code: 'not_operator' });
    sendJson(res, 200, {
      object: 'list',
      data: (await store.deadLetters()).map((d) => ({
        id: d.id,
        subscriber: d.subscriber,
        event: d.event,
        error: d.error,
        attempts: d.attempts,
        at: new Date(d.createdAt).toISOString(),
      })),
    });
  });
}
