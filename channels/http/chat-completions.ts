import { randomUUID } from 'node:crypto';
import { conversationKey, type InboundMessage } from '../../kernel/envelope.js';
import type { TurnEvent } from '../../kernel/turn-events.js';
import { type ListenContext, RequestError, type RouteContext, sendError, sendJson, withApprovalsText } from '../../src/channel/index.js';
import type { HttpChannelConfig } from './config.js';
import { authenticatedBody, externalIdFor, idempotencyKey, parsed, receiveFollowing, requestTrace, stableName, workerAlive } from './ingest.js';
import { providerError } from './provider-error.js';
import { type ChatRequest, checkConversationName, parseChatRequest, requestHash } from './request.js';
import { approvalObject, ChunkWriter, finishReasonFor, handoffOfDone, SseReply, usageFor } from './sse.js';

export const CONVERSATION_HEADER = 'x-switchboard-conversation';

/** POST /v1/chat/completions: one user message in, the agent's reply out (SSE or JSON). */
export async function chatCompletions(cfg: HttpChannelConfig, ctx: ListenContext, rc: RouteContext): Promise<void> {
  const { req, res } = rc;
  const got = await authenticatedBody(ctx, rc);
  if (!got) return;
  const { principal, raw } = got;
  let chat!: ChatRequest;
  let name: string | undefined;
  const ok = parsed(res, () => {
    chat = parseChatRequest(raw, cfg.maxMessageChars, cfg.jsonModes);
    // Own properties only: "__proto__", "constructor" or "toString" name no agent.
    if (!Object.hasOwn(cfg.agents, chat.model))
      throw new RequestError(404, `The model '${chat.model}' does not exist. GET /v1/models lists the agents.`, 'model', 'model_not_found');
    const header = req.headers[CONVERSATION_HEADER];
    if (typeof header === 'string' && header) name = checkConversationName(header, 'X-Switchboard-Conversation');
    else if (chat.user) name = checkConversationName(chat.user, 'user');
    // A one-off conversation's earlier messages are its context, which is text: their images would be lost.
    if (!name && chat.earlierImages)
      throw new RequestError(400, 'Only the last user message may carry images (the earlier ones are text context).', 'messages', 'unsupported_content');
  });
  if (!ok || !(await workerAlive(ctx, res))) return;

  // A named conversation keeps its history in the gateway and takes only the new
  // message; without a name the request's messages are a one-off conversation.
  const oneOff = !name;
  const idemKey = idempotencyKey(rc);
  // A retried one-off request (same Idempotency-Key) must land in the same conversation.
  const conversation = name ?? stableName('oneoff-', principal, idemKey);
  const key = conversationKey({ channel: 'http', workspace: principal.id, chat: conversation });
  const last = chat.messages[chat.messages.length - 1]!;
  const msg: InboundMessage = {
    channel: 'http',
    externalId: externalIdFor(principal, idemKey),
    conversationKey: key,
    sender: { id: principal.id },
    text: last.text,
    attachments: chat.attachments,
    receivedAt: new Date(),
    owner: principal.id,
    ...(oneOff && chat.messages.length > 1 ? { context: chat.messages.slice(0, -1) } : {}),
    ...(Object.keys(chat.overrides).length ? { overrides: chat.overrides } : {}),
    // The same Idempotency-Key with another body is refused (422), not answered from the first request's turn.
    ...(idemKey ? { requestHash: requestHash(chat, name) } : {}),
  };

  // The same steps as every channel: "YES K7Q2P" answers an approval, /new, /status, /stop in a
  // named conversation are commands, then the conversation rules (the cap on waiting messages, interrupt mode).
  const received = await receiveFollowing(ctx, res, msg, {
    ...(idemKey ? {} : { fresh: true }),
    // Without a name or an Idempotency-Key the conversation's key is a random id minted above.
    ...(oneOff && !idemKey ? { newConversation: true } : {}),
    ...requestTrace(req),
    operator: principal.operator,
    agent: chat.model,
    commands: !oneOff,
    rateLimit: cfg.applyLimits,
  });
  if (!received) return;
  if (received.kind === 'answered') {
    const { outcome } = received;
    const a = outcome.approval;
    if (a)
      return replyDirectly(res, chat, outcome.reply, {
        approvalAnswer: { code: a.code, ok: a.answer.ok, ...(a.answer.ok ? { status: a.answer.approval.status } : { error: a.answer.code }) },
      });
    // Taken over by an operator (or waiting for one): the notice; the operator's answer is read from the conversation's messages.
    return replyDirectly(res, chat, outcome.reply, { conversation: name, command: outcome.command, ...(outcome.handoff ? { handoff: outcome.handoff } : {}) });
  }
  const { accepted, follower } = received;
  // The conversation's turn waits for an approval: a plain request is answered with the notice at
  // once (the message is kept; GET /v1/conversations/{name}/messages has its answer later); a
  // streamed one shows it first and goes on waiting for its own answer.
  if (accepted.notice && !chat.stream) {
    follower.close();
    return replyDirectly(res, chat, accepted.notice, { conversation, queued: true, notice: accepted.notice, notices: [accepted.notice] });
  }

  const deadline = Date.now() + cfg.requestTimeoutMs;
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
    const reply = new SseReply(
      out,
      (e) => ({ switchboard: switchboardObject(conversation, e, notices) }),
      chat.includeUsage,
      notices,
      (e) => providerError(e, switchboardObject(conversation, e, notices)).body,
    );
    if (accepted.notice) reply.notice(accepted.notice);
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
      return sendError(res, 504, 'The reply is taking too long; the message is kept and will be answered in this conversation.', {
        type: 'timeout',
        code: 'timeout',
      });
    }
    if (e.type === 'error') return sendError(res, 502, e.message, { type: 'server_error', code: e.code });
    if (e.type === 'notice') notices.push(e.text);
    if (e.type !== 'done') continue;
    if (e.finishReason === 'error') {
      const failed = providerError(e, switchboardObject(conversation, e, notices));
      return sendJson(res, failed.status, failed.body);
    }
    sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: chat.model,
      // A parked turn: the requests' text fallback under the answer; `switchboard.approvals` has them structured.
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: withApprovalsText(e.text, e.approvals ?? []) },
          finish_reason: finishReasonFor(e.finishReason),
          logprobs: null,
        },
      ],
      usage: usageFor(e.usage),
      switchboard: switchboardObject(conversation, e, notices),
    });
    return;
  }
}

/** A reply the gateway gives itself (no turn, no model): JSON or a short SSE stream. */
function replyDirectly(res: RouteContext['res'], chat: { model: string; stream: boolean }, text: string, switchboard: Record<string, unknown>): void {
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
  const handoff = handoffOfDone(e);
  return {
    conversation,
    turn: e.turnId,
    slot: e.provider?.slot ?? null,
    fallbackActivated: e.provider?.fallbackActivated ?? false,
    attempts: e.provider?.attempts ?? [],
    ...(notices.length ? { notices } : {}),
    // The turn is parked until an operator answers; GET /v1/conversations/{conversation}/messages has the rest.
    ...(approval ? { approval: approvalObject(approval), approvals: e.approvals } : {}),
    // Its message went to the operator who took the conversation over while it waited.
    ...(handoff ? { handoff } : {}),
  };
}
