import { createHash, randomUUID } from 'node:crypto';
import type { Bus } from '../../adapters/bus/port.js';
import type { Store } from '../../adapters/store/store.js';
import type { Config } from '../../src/config.js';
import { conversationKey, type InboundMessage } from '../../kernel/envelope.js';
import { conversationTopic } from '../../src/event-publisher.js';
import type { TurnEvent } from '../../kernel/turn-events.js';
import { withApprovalsText } from '../../src/channel/index.js';
import { BodyTooLargeError, checkJsonContentType, sendJson, type RequestContext } from '../../src/http/server.js';
import type { Ingress, IngressOutcome } from '../../src/ingress.js';
import type { ApiKeyAuth } from '../../src/http/auth.js';
import { RequestError, sendError } from '../../src/http/errors.js';
import { checkConversationName, parseChatRequest } from './request.js';
import { approvalObject, ChunkWriter, finishReasonFor, SseReply, usageFor } from './sse.js';
import { TurnWaiter } from '../../src/http/turn-follower.js';
import type { ApprovalService } from '../../src/approvals/service.js';
import type { ConversationCommands } from '../../src/commands.js';
import type { RateLimits } from '../../src/limits.js';

export interface ChatDeps {
  config: Config;
  auth: ApiKeyAuth;
  store: Store;
  bus: Bus;
  ingress: Ingress;
  approvals: ApprovalService;
  commands: ConversationCommands;
  limits?: RateLimits;
}

export const CONVERSATION_HEADER = 'x-switchboard-conversation';

/** POST /v1/chat/completions: one user message in, the agent's reply out (SSE or JSON). */
export async function chatCompletions(deps: ChatDeps, ctx: RequestContext): Promise<void> {
  const { req, res } = ctx;
  const principal = deps.auth.authenticate(req);
  if (!principal) {
    sendError(res, 401, deps.auth.configured ? 'Incorrect API key provided.' : 'No API keys are configured on this gateway (set SWITCHBOARD_API_KEYS).', { code: 'invalid_api_key' });
    return;
  }
  // Requests per API key (limits.apiKey), before the body is even read.
  const perKey = await deps.limits?.checkApiKey(principal.id);
  if (perKey && !perKey.allowed) {
    req.resume();
    res.setHeader('retry-after', String(Math.max(1, Math.ceil(perKey.retryAfterMs / 1000))));
    return sendError(res, 429, perKey.message, { type: 'rate_limit_error', code: 'rate_limit_exceeded' });
  }
  let raw: Buffer;
  try {
    checkJsonContentType(req);
    raw = await ctx.body();
  } catch (err) {
    if (err instanceof BodyTooLargeError) return sendError(res, 413, `Request body too large: the limit is ${err.limit} bytes.`, { code: 'request_too_large' });
    throw err;
  }
  let chat;
  let name: string | undefined;
  try {
    chat = parseChatRequest(raw, deps.config.http.maxMessageChars);
    // Own properties only: "__proto__", "constructor" or "toString" name no agent.
    if (!Object.hasOwn(deps.config.agents, chat.model)) throw new RequestError(404, `The model '${chat.model}' does not exist. GET /v1/models lists the agents.`, 'model', 'model_not_found');
    const header = req.headers[CONVERSATION_HEADER];
    if (typeof header === 'string' && header) name = checkConversationName(header, 'X-Switchboard-Conversation');
    else if (chat.user) name = checkConversationName(chat.user, 'user');
  } catch (err) {
    if (err instanceof RequestError) return sendError(res, err.status, err.message, { param: err.param, code: err.code });
    throw err;
  }

  // A named conversation keeps its history in the gateway and takes only the new
  // message; without a name the request's messages are a one-off conversation.
  const oneOff = !name;
  const idem = req.headers['idempotency-key'];
  const idemKey = typeof idem === 'string' && idem ? idem.slice(0, 200) : undefined;
  // A retried one-off request (same Idempotency-Key) must land in the same conversation.
  const conversation = name ?? `oneoff-${idemKey ? createHash('sha256').update(`${principal.id}\0${idemKey}`).digest('hex').slice(0, 32) : randomUUID()}`;
  const key = conversationKey({ channel: 'http', workspace: principal.id, chat: conversation });
  const last = chat.messages[chat.messages.length - 1]!;
  const externalId = idemKey ? `${principal.id}:${idemKey}` : randomUUID();
  const msg: InboundMessage = {
    channel: 'http',
    externalId,
    conversationKey: key,
    sender: { id: principal.id },
    text: last.text,
    attachments: [],
    receivedAt: new Date(),
    owner: principal.id,
    ...(oneOff && chat.messages.length > 1 ? { context: chat.messages.slice(0, -1) } : {}),
  };

  // Subscribe while the ingress runs; onAccepted waits for the subscription, and the
  // turn can only start after it returns (the ingress wakes a worker after), so no event is missed.
  const opening = TurnWaiter.open(deps.bus, deps.store, conversationTopic(key)).then(
    (w) => ({ ok: true as const, w }),
    (err: unknown) => ({ ok: false as const, err }),
  );
  let waiter: TurnWaiter | undefined;
  let outcome: IngressOutcome;
  try {
    // The same pipeline as every channel: limits, approval answers, commands, the cap on waiting messages, interrupt mode.
    outcome = await deps.ingress.receive(msg, {
      authenticated: true,
      agent: chat.model,
      onAccepted: async () => {
        const o = await opening;
        if (!o.ok) throw o.err;
        waiter = o.w;
      },
    });
  } catch (err) {
    void opening.then((o) => o.ok && o.w.close());
    throw err;
  }
  // Not followed (refused, or answered here): the subscription is not needed.
  if (outcome.kind !== 'accepted') void opening.then((o) => o.ok && o.w.close());
  if (outcome.kind === 'refused') {
    if (outcome.code === 'rate_limited') {
      res.setHeader('retry-after', String(Math.max(1, Math.ceil((outcome.retryAfterMs ?? 1000) / 1000))));
      return sendError(res, 429, outcome.reply ?? 'Rate limit exceeded.', { type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    }
    if (outcome.code === 'conversation_full') return sendError(res, 429, outcome.reply ?? 'Too many messages are waiting in this conversation.', { type: 'rate_limit_error', code: 'conversation_full' });
    return sendError(res, 403, outcome.reply ?? 'Refused.', { code: 'access_denied' });
  }
  // "YES K7Q2P" / "NO K7Q2P" answers an approval; /new, /status, /stop are answered by the gateway itself.
  if (outcome.kind === 'answered') {
    if (outcome.approval) return replyDirectly(res, chat, outcome.reply, { approvalAnswer: outcome.approval });
    return replyDirectly(res, chat, outcome.reply, { conversation: name, command: outcome.command });
  }
  const accepted = outcome;
  const follower = waiter as TurnWaiter | undefined;
  if (!follower) throw new Error('the ingress accepted the message without calling onAccepted');
  let knownTurn: string | undefined;
  if (accepted.duplicate) knownTurn = (await deps.store.inboxRow(accepted.inboxId))?.turn_id ?? undefined;
  follower.bind(accepted.inboxId, knownTurn);
  if (accepted.duplicate) void follower.poll(true);

  const deadline = Date.now() + deps.config.http.requestTimeoutMs;
  const id = `chatcmpl-${accepted.inboxId}-${randomUUID().slice(0, 8)}`;
  const notices: string[] = [];
  let closed = false;
  res.on('close', () => {
    closed = true;
    follower.close();
  });

  if (chat.stream) {
    const out = new ChunkWriter(res, id, chat.model);
    out.open();
    const reply = new SseReply(out, (e) => ({ switchboard: switchboardObject(conversation, e, notices) }), chat.includeUsage, notices);
    for (;;) {
      const e = await follower.next(Math.max(0, deadline - Date.now()));
      if (closed) return;
      if (!e) {
        out.error('The reply is taking too long; the message is kept and will be answered in this conversation.', 'timeout');
        return;
      }
      if (reply.event(e)) return;
    }
  }

  for (;;) {
    const e = await follower.next(Math.max(0, deadline - Date.now()));
    if (closed) return;
    if (!e) {
      return sendError(res, 504, 'The reply is taking too long; the message is kept and will be answered in this conversation.', { type: 'timeout', code: 'timeout' });
    }
    if (e.type === 'error') return sendError(res, 502, e.message, { type: 'server_error', code: e.code });
    if (e.type === 'notice') notices.push(e.text);
    if (e.type !== 'done') continue;
    sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: chat.model,
      // A parked turn: the requests' text fallback under the answer; `switchboard.approvals` has them structured.
      choices: [{ index: 0, message: { role: 'assistant', content: withApprovalsText(e.text, e.approvals ?? []) }, finish_reason: finishReasonFor(e.finishReason), logprobs: null }],
      usage: usageFor(e.usage),
      switchboard: switchboardObject(conversation, e, notices),
    });
    return;
  }
}

/** A reply the gateway gives itself (no turn, no model): JSON or a short SSE stream. */
function replyDirectly(res: RequestContext['res'], chat: { model: string; stream: boolean }, text: string, switchboard: Record<string, unknown>): void {
  const id = `chatcmpl-${randomUUID()}`;
  if (chat.stream) {
    const out = new ChunkWriter(res, id, chat.model);
    out.open();
    out.text(text);
    out.finish('stop', { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }, { switchboard }, false);
    return;
  }
  sendJson(res, 200, {
    id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: chat.model,
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop', logprobs: null }],
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    switchboard,
  });
}

/** The `switchboard` object of a response: where the answer came from. */
function switchboardObject(conversation: string, e: Extract<TurnEvent, { type: 'done' }>, notices: string[]) {
  const approval = e.approvals?.[0];
  return {
    conversation,
    turn: e.turnId,
    slot: e.provider?.slot ?? null,
    fallbackActivated: e.provider?.fallbackActivated ?? false,
    attempts: e.provider?.attempts ?? [],
    ...(notices.length ? { notices } : {}),
    // The turn is parked until an operator answers; GET /v1/conversations/{conversation}/messages has the rest.
    ...(approval ? { approval: approvalObject(approval), approvals: e.approvals } : {}),
  };
}



