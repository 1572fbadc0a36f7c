import type { ConversationRepository } from '../../adapters/store/ports/conversations.js';
import type { ScheduleRecord, ScheduleRepository } from '../../adapters/store/ports/schedules.js';
import type { ApiKeyAuth } from '../http/auth.js';
import { sendError } from '../http/errors.js';
import { type HttpServer, sendJson } from '../http/server.js';
import { createSchedule, ScheduleRequestError } from '../schedules/create.js';

export const scheduleJson = (s: ScheduleRecord) => ({
  id: s.id,
  object: 'schedule',
  conversation: s.conversationId,
  conversationKey: s.conversationKey,
  channel: s.channel,
  kind: s.kind,
  cron: s.cron,
  at: s.at,
  tz: s.tz,
  prompt: s.prompt,
  runsPerDay: s.runsPerDay,
  tokensPerDay: s.tokensPerDay,
  check: s.check,
  nextAt: s.nextAt,
  createdBy: s.createdBy,
  createdAt: s.createdAt,
  lastRun: s.lastRun,
});

/** Operators create, list and delete schedules (what `switchboard schedule` talks to); each create and delete is in the audit ledger. */
export function registerScheduleApi(
  server: HttpServer,
  deps: {
    auth: ApiKeyAuth;
    schedules: ScheduleRepository;
    conversations: Pick<ConversationRepository, 'conversation' | 'conversationByKey'>;
    defaultTz: string;
  },
): void {
  const operator = (req: Parameters<ApiKeyAuth['authenticate']>[0]) => {
    const p = deps.auth.authenticate(req);
    return p?.operator === true ? p : null;
  };
  const refuse = (res: Parameters<typeof sendError>[0]) =>
    sendError(res, 403, 'Schedules need an operator key.', { type: 'permission_error', code: 'not_operator' });

  server.route('POST', '/v1/schedules', async ({ req, res, json }) => {
    const p = operator(req);
    if (!p) return refuse(res);
    const b: Record<string, unknown> = await json({ hint: '{"conversation", "cron" | "at", "tz", "prompt", "runsPerDay", "tokensPerDay", "check"}' });
    const ref = b.conversation;
    const conv = typeof ref === 'string' ? ((await deps.conversations.conversation(ref)) ?? (await deps.conversations.conversationByKey(ref))) : undefined;
    if (!conv)
      return sendError(res, 400, '"conversation" must name an existing conversation (its id or key).', { param: 'conversation', code: 'invalid_value' });
    try {
      const s = await createSchedule(deps.schedules, { ...b, conversationId: conv.id }, `http:${p.id}`, { defaultTz: deps.defaultTz });
      sendJson(res, 201, scheduleJson(s));
    } catch (e) {
      if (e instanceof ScheduleRequestError) return sendError(res, 400, e.message, { param: e.param, code: 'invalid_value' });
      throw e;
    }
  });

  server.route('GET', '/v1/schedules', async ({ req, res }) => {
    if (!operator(req)) return refuse(res);
    sendJson(res, 200, { object: 'list', data: (await deps.schedules.list()).map(scheduleJson) });
  });

  server.route('GET', '/v1/schedules/:id', async ({ req, res, params }) => {
    if (!operator(req)) return refuse(res);
    const s = await deps.schedules.get(params.id!);
    if (!s) return sendError(res, 404, `There is no schedule ${params.id}.`, { code: 'not_found' });
    sendJson(res, 200, { ...scheduleJson(s), runs: await deps.schedules.runs(s.id) });
  });

  server.route('DELETE', '/v1/schedules/:id', async ({ req, res, params }) => {
    const p = operator(req);
    if (!p) return refuse(res);
    if (!(await deps.schedules.remove(params.id!, `http:${p.id}`))) return sendError(res, 404, `There is no schedule ${params.id}.`, { code: 'not_found' });
    sendJson(res, 200, { ok: true, id: params.id, deleted: true });
  });
}
