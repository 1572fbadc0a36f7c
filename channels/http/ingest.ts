import { createHash, randomUUID } from 'node:crypto';
import type { InboundMessage } from '../../kernel/envelope.js';
import {
  type Accepted,
  BodyTooLargeError,
  checkJsonContentType,
  type ListenContext,
  type Principal,
  type ReceiveOptions,
  type ReceiveOutcome,
  RequestError,
  type RouteContext,
  sendError,
  type TurnFollower,
} from '../../src/channel/index.js';

/**
 * The ingress steps every HTTP API route shares (chat completions and responses): the key and its
 * rate limit, the body, a live worker, the Idempotency-Key, and the one `receive` with a follower
 * bound to the inbox row before a worker is woken. Each step that refuses answers itself and
 * returns undefined.
 */

/** The API key (and requests per key, limits.apiKey) before the body is read, then the body. */
export async function authenticatedBody(ctx: ListenContext, rc: RouteContext): Promise<{ principal: Principal; raw: Buffer } | undefined> {
  const { req, res } = rc;
  const auth = await ctx.authenticate(req, { rateLimit: true });
  if (!auth.ok) {
    if (auth.status === 401) {
      sendError(res, 401, auth.message, { code: auth.code });
      return undefined;
    }
    req.resume();
    res.setHeader('retry-after', retryAfter(auth.retryAfterMs));
    sendError(res, 429, auth.message, { type: 'rate_limit_error', code: auth.code });
    return undefined;
  }
  try {
    checkJsonContentType(req);
    return { principal: auth.principal, raw: await rc.body() };
  } catch (err) {
    if (err instanceof BodyTooLargeError) {
      sendError(res, 413, `Request body too large: the limit is ${err.limit} bytes.`, { code: 'request_too_large' });
      return undefined;
    }
    throw err;
  }
}

/** Runs a parse step: a RequestError is answered in the OpenAI shape (true: go on). */
export function parsed(res: RouteContext['res'], step: () => void): boolean {
  try {
    step();
    return true;
  } catch (err) {
    if (err instanceof RequestError) {
      sendError(res, err.status, err.message, { param: err.param, code: err.code });
      return false;
    }
    throw err;
  }
}

/**
 * No worker has beaten within the heartbeat TTL: nobody would answer, so say so now, before
 * anything is written (rather than wait for the request timeout).
 */
export async function workerAlive(ctx: ListenContext, res: RouteContext['res']): Promise<boolean> {
  if (await ctx.workersAlive()) return true;
  sendError(res, 503, 'No worker is alive to answer: start a `switchboard worker` process (or `switchboard start`), then retry.', {
    type: 'server_error',
    code: 'no_worker',
  });
  return false;
}

/** The request's Idempotency-Key (at most 200 characters), if it sent one. */
export function idempotencyKey(rc: RouteContext): string | undefined {
  const idem = rc.req.headers['idempotency-key'];
  return typeof idem === 'string' && idem ? idem.slice(0, 200) : undefined;
}

/** The message's external id: the key's retries land on the same inbox row; without one, a fresh id. */
export function externalIdFor(principal: Principal, idemKey: string | undefined): string {
  return idemKey ? `${principal.id}:${idemKey}` : randomUUID();
}

/** A name that stays the same across retries of one Idempotency-Key (a retried request must land in the same conversation). */
export function stableName(prefix: string, principal: Principal, idemKey: string | undefined): string {
  return `${prefix}${idemKey ? createHash('sha256').update(`${principal.id}\0${idemKey}`).digest('hex').slice(0, 32) : randomUUID()}`;
}

export type Received =
  | { kind: 'answered'; outcome: Extract<ReceiveOutcome, { kind: 'answered' }> }
  | { kind: 'accepted'; accepted: Accepted; follower: TurnFollower };

/** The W3C traceparent header a client sent (its trace continues through the message's span), as receive options. */
export function requestTrace(req: RouteContext['req']): { traceparent?: string } {
  const h = req.headers.traceparent;
  return typeof h === 'string' && h ? { traceparent: h } : {};
}

/**
 * The one way in: subscribe to the conversation's turn events while the message goes in (the
 * follower is bound to the inbox row before a worker is woken, so no event is missed), then the same
 * steps as every channel. A refusal is answered here (422 for a reused Idempotency-Key, 429 for the
 * limits) and undefined returned; a command or an approval answer comes back as `answered`.
 */
export async function receiveFollowing(
  ctx: ListenContext,
  res: RouteContext['res'],
  msg: InboundMessage,
  opts: Omit<ReceiveOptions, 'onAccepted' | 'authenticated'>,
): Promise<Received | undefined> {
  const following = ctx.follow(msg.conversationKey);
  let waiter: TurnFollower | undefined;
  const dropFollower = () =>
    void following.then(
      (w) => w.close(),
      () => {},
    );
  let outcome: ReceiveOutcome;
  try {
    outcome = await ctx.receive(msg, {
      ...opts,
      authenticated: true,
      onAccepted: async (accepted) => {
        waiter = await following;
        waiter.bind(accepted.inboxId, accepted.turnId);
      },
    });
  } catch (err) {
    dropFollower();
    throw err;
  }
  if (outcome.kind === 'refused') {
    dropFollower();
    if (outcome.reason === 'request_mismatch') {
      sendError(res, 422, 'This Idempotency-Key was already used for a request with a different body; use a new key for a new request.', {
        param: 'Idempotency-Key',
        code: 'idempotency_key_reused',
      });
      return undefined;
    }
    if (outcome.reason === 'rate_limit') res.setHeader('retry-after', retryAfter(outcome.retryAfterMs));
    const code = outcome.reason === 'rate_limit' ? 'rate_limit_exceeded' : outcome.reason;
    sendError(res, 429, outcome.reply ?? 'refused', { type: 'rate_limit_error', code });
    return undefined;
  }
  if (outcome.kind === 'answered') {
    dropFollower();
    return { kind: 'answered', outcome };
  }
  const follower = waiter!;
  if (outcome.duplicate) void follower.poll(true);
  return { kind: 'accepted', accepted: outcome, follower };
}

function retryAfter(ms: number | undefined): string {
  return String(Math.max(1, Math.ceil((ms ?? 1000) / 1000)));
}
