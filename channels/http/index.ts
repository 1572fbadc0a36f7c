import type { HttpServer } from '../../src/http/server.js';
import { sendJson } from '../../src/http/server.js';
import { chatCompletions, type ChatDeps } from './chat-completions.js';
import { sendError } from '../../src/http/errors.js';
import { registerOperatorApi } from '../../src/api/operator-api.js';

/** The HTTP channel: the OpenAI-compatible API, approvals and conversation reading. */
export function registerHttpChannel(server: HttpServer, deps: ChatDeps): void {
  registerOperatorApi(server, deps);
  server.route('POST', '/v1/chat/completions', (ctx) => chatCompletions(deps, ctx));
  server.route('GET', '/v1/models', ({ req, res }) => {
    if (!deps.auth.authenticate(req)) return sendError(res, 401, 'Incorrect API key provided.', { code: 'invalid_api_key' });
    sendJson(res, 200, {
      object: 'list',
      data: Object.entries(deps.config.agents).map(([id, a]) => ({ id, object: 'model', created: 0, owned_by: 'switchboard', description: a.description })),
    });
  });
}
