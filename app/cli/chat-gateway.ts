/**
 * The gateway calls of `switchboard chat` (app/cli/chat.ts): an approval answered
 * through the approvals API, and the conversation followed until a turn that
 * waited for an approval has answered.
 */

/** An approval request as the streamed reply's `switchboard.approval` carries it (channels/http/sse.ts). */
export interface ChatApproval {
  code: string;
  tool: string;
  tier: string;
  expiresAt: string;
  alwaysPermitted?: boolean;
  /** false: the requester's own key may not answer it; an operator must. */
  selfApprovable?: boolean;
}

export type ChatDecision = 'approve' | 'deny' | 'always';

/** "Always allow" is offered only for a call that can become an exact rule, and never for the dangerous tier. */
export function alwaysOffered(a: ChatApproval): boolean {
  return a.alwaysPermitted === true && a.tier !== 'dangerous';
}

/** POST /v1/approvals/{code} with this key (never a "YES CODE" chat message). */
export async function answerApproval(base: string, key: string, code: string, decision: ChatDecision): Promise<{ ok: boolean; message: string }> {
  const r = await fetch(`${base}/v1/approvals/${encodeURIComponent(code)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ decision }),
  }).catch((e: unknown) => e as Error);
  if (r instanceof Error) return { ok: false, message: `cannot reach ${base}: ${r.message}` };
  const body = (await r.json().catch(() => ({}))) as { message?: string; error?: { message: string } };
  return { ok: r.ok, message: body.message ?? body.error?.message ?? `HTTP ${r.status}` };
}

export async function latestMessageId(base: string, key: string, conversation: string): Promise<number> {
  const r = await fetch(`${base}/v1/conversations/${encodeURIComponent(conversation)}/messages`, { headers: { authorization: `Bearer ${key}` } }).catch(
    () => null,
  );
  if (!r?.ok) return 0;
  const b = (await r.json()) as { data: Array<{ id: number }> };
  return b.data.length ? b.data[b.data.length - 1]!.id : 0;
}

export type Resumed =
  | { kind: 'answer'; text: string; lastId: number }
  | { kind: 'approval'; approval: ChatApproval }
  | { kind: 'timeout' }
  /** `stop` resolved first (the user typed a line). */
  | { kind: 'stopped' };

/**
 * Follows the conversation after a turn parked: the resumed turn's answer (its last stored
 * message is the assistant's), or, with an operator key, a new request of the same turn
 * (it parked again). Polls until `until` or until `stop` resolves.
 */
export async function followResumedTurn(
  f: { base: string; key: string; operatorKey?: string | undefined; conversation: string; turn?: string | undefined; after: number; seen: Set<string> },
  until: number,
  stop: Promise<unknown>,
): Promise<Resumed> {
  let stopped = false;
  void stop.then(() => (stopped = true));
  while (!stopped && Date.now() < until) {
    const r = await fetch(`${f.base}/v1/conversations/${encodeURIComponent(f.conversation)}/messages?after=${f.after}`, {
      headers: { authorization: `Bearer ${f.key}` },
    }).catch(() => null);
    if (r?.ok) {
      const b = (await r.json()) as { data: Array<{ id: number; role: string; content: string }> };
      const last = b.data[b.data.length - 1];
      if (last && last.role === 'assistant' && last.content) return { kind: 'answer', text: last.content, lastId: last.id };
    }
    if (f.operatorKey && f.turn) {
      const again = await pendingOfTurn(f.base, f.operatorKey, f.turn, f.seen);
      if (again) return { kind: 'approval', approval: again };
    }
    await Promise.race([new Promise((res) => setTimeout(res, 400)), stop]);
  }
  return stopped ? { kind: 'stopped' } : { kind: 'timeout' };
}

/** A pending request of this turn not answered here yet (the resumed turn asked again). */
async function pendingOfTurn(base: string, operatorKey: string, turn: string, seen: Set<string>): Promise<ChatApproval | undefined> {
  const r = await fetch(`${base}/v1/approvals`, { headers: { authorization: `Bearer ${operatorKey}` } }).catch(() => null);
  if (!r?.ok) return undefined;
  const b = (await r.json()) as { data: Array<ChatApproval & { turn: string }> };
  const a = b.data.find((x) => x.turn === turn && !seen.has(x.code));
  return a && { code: a.code, tool: a.tool, tier: a.tier, expiresAt: a.expiresAt, alwaysPermitted: a.alwaysPermitted === true };
}
