import { conversationKey, type InboundMessage } from '../../kernel/envelope.js';
import type { TurnEvent } from '../../kernel/turn-events.js';
import { type ListenContext, type Principal, RequestError, type RouteContext, sendError, sendJson, type TurnFollower } from '../../src/channel/index.js';
import { CONVERSATION_HEADER } from './chat-completions.js';
import type { HttpChannelConfig } from './config.js';
import { authenticatedBody, externalIdFor, idempotencyKey, parsed, receiveFollowing, requestTrace, stableName, workerAlive } from './ingest.js';
import { providerError } from './provider-error.js';
import { checkConversationName } from './request.js';
import { EventWriter, ResponseOutput, responsesUsage, type StreamEvent } from './responses-output.js';
import { parseResponsesRequest, type ResponsesRequest, responsesRequestHash } from './responses-request.js';
import { ResponseStore, type StoredResponse } from './responses-store.js';
import { approvalObject, handoffOfDone } from './sse.js';

/**
 * The OpenAI Responses API: POST /v1/responses (streamed or not), GET and DELETE
 * /v1/responses/{id}. A response is one turn of a gateway conversation; `previous_response_id`
 * continues that conversation, so the history is the gateway's, scoped to the API key.
 */

type Done = Extract<TurnEvent, { type: 'done' }>;

const notFound = (res: RouteContext['res'], id: string, param: string | null = null) =>
  sendError(res, 404, `Response with id '${id}' not found.`, { param, code: 'not_found' });

/** The Responses object of a record (what POST answers, the stream's response.* events carry and GET returns). */
export function responseObject(r: StoredResponse, store: boolean) {
  return {
    id: r.id,
    object: 'response',
    created_at: r.createdAt,
    status: r.status,
    background: false,
    error: r.error,
    incomplete_details: r.incompleteDetails,
    instructions: r.instructions,
    max_output_tokens: r.echo.max_output_tokens,
    metadata: r.metadata,
    model: r.model,
    output: r.output,
    parallel_tool_calls: false,
    previous_response_id: r.previousResponseId,
    reasoning: { effort: null, summary: null },
    store,
    temperature: r.echo.temperature,
    text: { format: r.echo.format ?? { type: 'text' }, verbosity: 'medium' },
    tool_choice: 'auto',
    tools: [],
    top_p: r.echo.top_p,
    truncation: r.echo.truncation,
    usage: r.usage,
    switchboard: r.switchboard,
  };
}

/** Where a finished turn leaves the record: its status, usage, error and the `switchboard` object. */
function settle(r: StoredResponse, out: ResponseOutput, e: Done | Extract<TurnEvent, { type: 'error' }>, conversationShown: boolean): number {
  r.output = out.items;
  const base = conversationShown ? { conversation: r.conversation } : {};
  if (e.type === 'error') {
    r.status = 'failed';
    r.error = { code: 'server_error', message: e.message };
    r.switchboard = { ...base, turn: e.turnId, ...(out.notices.length ? { notices: out.notices } : {}) };
    return 502;
  }
  const approval = e.approvals?.[0];
  r.usage = responsesUsage(e.usage);
  r.switchboard = {
    ...base,
    turn: e.turnId,
    slot: e.provider?.slot ?? null,
    fallbackActivated: e.provider?.fallbackActivated ?? false,
    attempts: e.provider?.attempts ?? [],
    ...(out.notices.length ? { notices: out.notices } : {}),
    ...(approval ? { approval: approvalObject(approval), approvals: e.approvals } : {}),
  };
  // Its message went to the operator who took the conversation over while it waited.
  const handoff = handoffOfDone(e);
  if (handoff) r.switchboard.handoff = handoff;
  if (e.finishReason === 'error') {
    const failed = providerError(e, r.switchboard);
    r.status = 'failed';
    r.error = { code: failed.status === 503 ? 'rate_limit_exceeded' : 'server_error', message: failed.body.error.message };
    return failed.status;
  }
  if (e.finishReason === 'length') {
    r.status = 'incomplete';
    r.incompleteDetails = { reason: 'max_output_tokens' };
  } else r.status = 'completed';
  return 200;
}

export function mountResponses(cfg: HttpChannelConfig, ctx: ListenContext): void {
  const store = new ResponseStore(ctx.state);
  ctx.mount({ method: 'POST', path: '/v1/responses', handler: (rc) => createResponse(cfg, ctx, store, rc) });
  ctx.mount({
    method: 'GET',
    path: '/v1/responses/:id',
    handler: async (rc) => {
      const principal = await principalOf(ctx, rc);
      if (!principal) return;
      const r = await store.get(rc.params.id!, principal.id);
      if (!r) return notFound(rc.res, rc.params.id!);
      if (r.status === 'queued' || r.status === 'in_progress') await catchUp(ctx, store, r);
      sendJson(rc.res, 200, responseObject(r, true));
    },
  });
  ctx.mount({
    method: 'DELETE',
    path: '/v1/responses/:id',
    handler: async (rc) => {
      const principal = await principalOf(ctx, rc);
      if (!principal) return;
      const r = await store.get(rc.params.id!, principal.id);
      if (!r) return notFound(rc.res, rc.params.id!);
      await store.delete(r);
      sendJson(rc.res, 200, { id: r.id, object: 'response', deleted: true });
    },
  });
}

async function principalOf(ctx: ListenContext, rc: RouteContext): Promise<Principal | undefined> {
  const a = await ctx.authenticate(rc.req);
  if (a.ok) return a.principal;
  sendError(rc.res, 401, 'Incorrect API key provided.', { code: 'invalid_api_key' });
  return undefined;
}

/**
 * A record left unfinished (the client went away, or a plain request was answered "queued" while
 * its conversation waited for an approval): the finished turn is read from the store now.
 */
async function catchUp(ctx: ListenContext, store: ResponseStore, r: StoredResponse): Promise<void> {
  const follower = await ctx.follow(r.conversationKey);
  try {
    follower.bind(r.inboxId);
    await follower.poll(true);
    const out = new ResponseOutput();
    for (;;) {
      const e = await follower.next(200);
      if (!e) return;
      const end = out.event(e);
      if (end) {
        settle(r, out, end, true);
        await store.save(r);
        return;
      }
    }
  } finally {
    follower.close();
  }
}

/** Where a request's turn runs: the conversation it continues or names, else a new one. */
interface Target {
  conversation: string;
  /** The client may read the conversation (GET /v1/conversations/{name}/messages): not for store: false. */
  shown: boolean;
  previous?: StoredResponse;
  /** The conversation's name is a random id minted for this request (no name, no previous response, no Idempotency-Key). */
  minted?: boolean;
}

async function resolveTarget(
  rc: RouteContext,
  store: ResponseStore,
  r: ResponsesRequest,
  principal: Principal,
  idemKey: string | undefined,
): Promise<Target | undefined> {
  const header = rc.req.headers[CONVERSATION_HEADER];
  let named: string | undefined;
  if (
    !parsed(rc.res, () => {
      if (typeof header === 'string' && header) named = checkConversationName(header, 'X-Switchboard-Conversation');
      if (named && r.previousResponseId)
        throw new RequestError(400, 'Send either previous_response_id or X-Switchboard-Conversation, not both.', 'previous_response_id', 'invalid_value');
      // The turn of a stored conversation is kept in its history: store: false could not keep that promise.
      if (!r.store && (named || r.previousResponseId))
        throw new RequestError(
          400,
          "'store: false' cannot continue a conversation (its turn would be kept in that conversation's history); leave out store or previous_response_id",
          'store',
          'unsupported_parameter',
        );
    })
  )
    return undefined;
  if (r.previousResponseId) {
    const previous = await store.get(r.previousResponseId, principal.id);
    if (!previous) {
      sendError(rc.res, 404, `Previous response with id '${r.previousResponseId}' not found.`, { param: 'previous_response_id', code: 'not_found' });
      return undefined;
    }
    return { conversation: previous.conversation, shown: true, previous };
  }
  if (named) return { conversation: named, shown: true };
  const minted = idemKey ? {} : { minted: true };
  return r.store
    ? { conversation: stableName('resp-', principal, idemKey), shown: true, ...minted }
    : { conversation: stableName('oneoff-', principal, idemKey), shown: false, ...minted };
}

async function createResponse(cfg: HttpChannelConfig, ctx: ListenContext, store: ResponseStore, rc: RouteContext): Promise<void> {
  const { res } = rc;
  const got = await authenticatedBody(ctx, rc);
  if (!got) return;
  const { principal, raw } = got;
  let r!: ResponsesRequest;
  const ok = parsed(res, () => {
    r = parseResponsesRequest(raw, cfg.maxMessageChars, cfg.jsonModes);
    if (!Object.hasOwn(cfg.agents, r.model))
      throw new RequestError(404, `The model '${r.model}' does not exist. GET /v1/models lists the agents.`, 'model', 'model_not_found');
  });
  if (!ok) return;
  const idemKey = idempotencyKey(rc);
  const target = await resolveTarget(rc, store, r, principal, idemKey);
  if (!target || !(await workerAlive(ctx, res))) return;
  const id = stableName('resp_', principal, idemKey ? `responses\0${idemKey}` : undefined);
  const key = conversationKey({ channel: 'http', workspace: principal.id, chat: target.conversation });

  // Only the conversation's newest response may be continued: its history is one line, and an older
  // response's continuation would answer from a history the client did not see. A short lease makes
  // the check and the new response's "newest" one step against a concurrent continuation.
  let lease: Awaited<ReturnType<ListenContext['leases']['tryAcquire']>> = null;
  if (target.previous) {
    for (let i = 0; i < 50 && !lease; i++) {
      lease = await ctx.leases.tryAcquire(`http-responses:${key}`, 15_000);
      if (!lease) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (!lease)
      return sendError(res, 409, 'Another request is continuing this conversation; retry.', { param: 'previous_response_id', code: 'conversation_busy' });
  }
  try {
    const retry = await store.get(id, principal.id);
    if (target.previous && !retry && (await store.latest(principal.id, target.conversation)) !== target.previous.id)
      return sendError(
        res,
        400,
        `Response '${target.previous.id}' is not the latest response of its conversation; continue from the latest one (a conversation has one line of history).`,
        { param: 'previous_response_id', code: 'previous_response_not_latest' },
      );
    await answer(cfg, ctx, store, rc, { r, principal, idemKey, target, id, key });
  } finally {
    await lease?.release().catch((err: unknown) => ctx.log.debug({ err }, 'responses: the continuation lease was not released; it expires'));
  }
}

async function answer(
  cfg: HttpChannelConfig,
  ctx: ListenContext,
  store: ResponseStore,
  rc: RouteContext,
  a: { r: ResponsesRequest; principal: Principal; idemKey: string | undefined; target: Target; id: string; key: string },
): Promise<void> {
  const { res } = rc;
  const { r, principal, idemKey, target, id, key } = a;
  const last = r.input[r.input.length - 1]!;
  const context = [...(r.instructions ? [{ role: 'system' as const, text: r.instructions }] : []), ...r.input.slice(0, -1)];
  const msg: InboundMessage = {
    channel: 'http',
    externalId: externalIdFor(principal, idemKey),
    conversationKey: key,
    sender: { id: principal.id },
    text: last.text,
    attachments: r.attachments,
    receivedAt: new Date(),
    owner: principal.id,
    // Instructions are this response's only (a system part of its turn); earlier input items join the history.
    ...(context.length ? { context } : {}),
    ...(Object.keys(r.overrides).length ? { overrides: r.overrides } : {}),
    ...(idemKey ? { requestHash: responsesRequestHash(r, target.conversation) } : {}),
  };
  const received = await receiveFollowing(ctx, res, msg, {
    ...(idemKey ? {} : { fresh: true }),
    ...(target.minted ? { newConversation: true } : {}),
    ...requestTrace(rc.req),
    operator: principal.operator,
    agent: r.model,
    // "/new" and the like are text here: a conversation continues by previous_response_id.
    commands: false,
    rateLimit: cfg.applyLimits,
  });
  if (!received) return;

  const record: StoredResponse = {
    id,
    owner: principal.id,
    conversation: target.conversation,
    conversationKey: key,
    inboxId: received.kind === 'accepted' ? received.accepted.inboxId : 0,
    model: r.model,
    createdAt: Math.floor(Date.now() / 1000),
    status: 'in_progress',
    instructions: r.instructions ?? null,
    previousResponseId: r.previousResponseId ?? null,
    metadata: r.metadata ?? {},
    echo: r.echo,
    output: [],
    usage: null,
    error: null,
    incompleteDetails: null,
    switchboard: target.shown ? { conversation: target.conversation } : {},
  };
  const keep = async () => {
    if (r.store) await store.save(record);
  };

  const writer = r.stream ? new EventWriter(res) : undefined;
  const out = new ResponseOutput((e: StreamEvent) => writer?.write(e));
  const snapshot = () => structuredClone(responseObject(record, r.store));

  if (received.kind === 'answered') {
    // An approval answer typed as the message ("YES K7Q4P"): the gateway's own reply, no turn.
    const { outcome } = received;
    writer?.open();
    writer?.write({ type: 'response.created', response: snapshot() });
    out.say(outcome.reply);
    record.output = out.items;
    record.status = 'completed';
    record.usage = responsesUsage({ input: 0, output: 0, totalTokens: 0, cost: 0 });
    record.switchboard = {
      ...record.switchboard,
      ...(outcome.approval ? { approvalAnswer: { code: outcome.approval.code, ok: outcome.approval.answer.ok } } : {}),
    };
    await keep();
    if (writer) {
      writer.write({ type: 'response.completed', response: snapshot() });
      return writer.end();
    }
    return sendJson(res, 200, responseObject(record, r.store));
  }

  const { accepted, follower } = received;
  if (r.store) await store.setLatest(principal.id, target.conversation, id);
  // The conversation's turn waits for an approval: a plain request is answered "queued" with the
  // notice at once; GET /v1/responses/{id} has the answer later. A streamed one shows it and waits.
  if (accepted.notice && !writer) {
    follower.close();
    out.notice(accepted.notice);
    out.close();
    record.output = out.items;
    record.status = 'queued';
    record.switchboard = { ...record.switchboard, queued: true, notices: out.notices };
    await keep();
    return sendJson(res, 200, responseObject(record, r.store));
  }
  await keep();
  await follow(cfg, rc, { record, out, writer, follower, notice: accepted.notice, keep, snapshot, shown: target.shown });
}

async function follow(
  cfg: HttpChannelConfig,
  rc: RouteContext,
  f: {
    record: StoredResponse;
    out: ResponseOutput;
    writer: EventWriter | undefined;
    follower: TurnFollower;
    notice: string | undefined;
    keep: () => Promise<void>;
    snapshot: () => ReturnType<typeof responseObject>;
    shown: boolean;
  },
): Promise<void> {
  const { res } = rc;
  const { record, out, writer, follower } = f;
  const deadline = Date.now() + cfg.requestTimeoutMs;
  let closed = false;
  res.on('close', () => {
    closed = true;
    follower.close();
  });
  if (writer) {
    writer.open();
    writer.write({ type: 'response.created', response: f.snapshot() });
    writer.write({ type: 'response.in_progress', response: f.snapshot() });
  }
  if (f.notice) out.notice(f.notice);
  const timeoutMessage = 'The reply is taking too long; the message is kept and will be answered in this conversation (GET /v1/responses/{id}).';
  for (;;) {
    const e = await follower.next(Math.max(0, deadline - Date.now()));
    if (closed) return;
    if (!e) {
      if (writer) {
        writer.write({ type: 'error', code: 'timeout', message: timeoutMessage, param: null });
        return writer.end();
      }
      return sendError(res, 504, timeoutMessage, { type: 'timeout', code: 'timeout' });
    }
    const end = out.event(e);
    if (!end) continue;
    const status = settle(record, out, end, f.shown);
    await f.keep();
    if (writer) {
      const type = record.status === 'failed' ? 'response.failed' : record.status === 'incomplete' ? 'response.incomplete' : 'response.completed';
      writer.write({ type, response: f.snapshot() });
      return writer.end();
    }
    if (status !== 200) {
      const body = end.type === 'done' ? providerError(end, record.switchboard).body : undefined;
      return sendJson(res, status, body ?? { error: { message: record.error?.message ?? 'failed', type: 'server_error', param: null, code: 'server_error' } });
    }
    return sendJson(res, 200, f.snapshot());
  }
}
