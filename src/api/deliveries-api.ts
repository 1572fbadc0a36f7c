import type { DeliveryRepository } from '../../adapters/store/ports/deliveries.js';
import type { ApiKeyAuth } from '../http/auth.js';
import { sendError } from '../http/errors.js';
import { type HttpServer, sendJson } from '../http/server.js';

/** Operators see the replies the delivery queue gave up on (what `switchboard status` counts). */
export function registerDeliveryApi(server: HttpServer, auth: ApiKeyAuth, store: Pick<DeliveryRepository, 'deadLetters'>): void {
  server.route('GET', '/v1/deliveries/dead-letters', async ({ req, res }) => {
    if (auth.authenticate(req)?.operator !== true)
      return sendError(res, 403, 'Dead deliveries need an operator key.', { type: 'permission_error', code: 'not_operator' });
    sendJson(res, 200, {
      object: 'list',
      data: (await store.deadLetters()).map((d) => ({
        id: d.id,
        turn: d.turnId,
        conversation: d.conversationId,
        channel: d.channel,
        code: d.code,
        error: d.error,
        attempts: d.attempts,
        at: new Date(d.createdAt).toISOString(),
      })),
    });
  });
}
