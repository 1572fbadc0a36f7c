import type { InboundMessage } from '../../../kernel/envelope.js';
import { NOTICE } from '../../handoffs/text.js';
import type { IngressContext, IngressStep } from '../context.js';
import type { AcceptedOutcome, IngressOutcome } from '../outcome.js';
import { requestMismatch } from '../request-mismatch.js';
import { approvalAnswerIn, commandIn, operatorCommandIn } from '../text-intent.js';

/**
 * A claim older than this is a dead or failed delivery's (one whose database went away before it
 * could let go): a redelivery takes it over. The steps a claim covers take milliseconds.
 */
const STALE_CLAIM_MS = 10_000;
/** How long a redelivery waits for a concurrent delivery of the same event to finish. */
const WAIT_MS = 15_000;
const POLL_MS = 50;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The first step: an event seen before gets its first outcome again, nothing
 * done twice. A message already in the inbox is a duplicate (no second write);
 * a command or an approval answer is claimed by (channel, external id) before
 * the later steps run, so of two concurrent deliveries one acts and the other
 * waits for its outcome, and a later redelivery gets that outcome back.
 */
export const redelivery: IngressStep = {
  name: 'redelivery',
  async run(msg, ctx, next) {
    if (ctx.opts.fresh) return next();
    const outcomes = ctx.deps.outcomes;
    const known = await ctx.deps.store.inboxByExternalId(msg.channel, msg.externalId);
    // Recorded while the conversation was taken over: passed on to the operator once, answered by no turn.
    if (known?.handoff) return handedOver(msg, known.handoff);
    if (known) return requestMismatch(msg, known) ?? duplicate({ kind: 'accepted', ...known, replayed: true }, ctx);
    // Only what the gateway answers itself without the inbox (a command, an approval answer) acts
    // outside the inbox's unique key: only that is claimed and recorded. Everything else is either
    // accepted (the inbox row is its record) or refused, and a refusal is simply decided again
    // (the same pairing code, a rate limit that may have lifted).
    if (!outcomes || !answeredHere(msg, ctx)) return next();
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const c = await outcomes.claim(msg.channel, msg.externalId, STALE_CLAIM_MS);
      if (c.state === 'claimed') break;
      if (c.state === 'recorded') return replay(c.outcome, ctx);
      // The other delivery may have been accepted meanwhile: its inbox row is its record.
      const taken = await ctx.deps.store.inboxByExternalId(msg.channel, msg.externalId);
      if (taken?.handoff) return handedOver(msg, taken.handoff);
      if (taken) return requestMismatch(msg, taken) ?? duplicate({ kind: 'accepted', ...taken, replayed: true }, ctx);
      if (Date.now() > deadline) throw new Error(`event ${msg.channel}:${msg.externalId} is still being handled by another delivery`);
      await sleep(POLL_MS);
    }
    let outcome: IngressOutcome;
    try {
      outcome = await next();
    } catch (err) {
      await outcomes
        .release(msg.channel, msg.externalId)
        .catch((e: unknown) => ctx.deps.log.warn({ err: e }, 'could not release an ingress claim; a redelivery takes it over after a minute'));
      throw err;
    }
    await record(msg, outcome, ctx);
    return outcome;
  },
};

/** A redelivered message that was passed on to an operator: the same answer, nothing passed on again (an API caller gets the notice; a chat is not told twice). */
function handedOver(msg: InboundMessage, handoff: string): IngressOutcome {
  const reply = msg.channel === 'http' || msg.channel === 'mcp' ? NOTICE.taken : '';
  return { kind: 'answered', reply, ok: true, handoff: { id: handoff, state: 'taken' }, replayed: true };
}

async function record(msg: InboundMessage, outcome: IngressOutcome, ctx: IngressContext): Promise<void> {
  const outcomes = ctx.deps.outcomes!;
  try {
    if (outcome.kind === 'refused' && outcome.code === 'conversation_full') await outcomes.release(msg.channel, msg.externalId);
    else if (outcome.kind === 'refused' && outcome.code === 'rate_limited')
      await outcomes.complete(msg.channel, msg.externalId, outcome, outcome.retryAfterMs ?? 1_000);
    // Accepted: the inbox row is the record (a redelivery finds it first); the claim row is left for the pruning, saving a write per message.
    else if (outcome.kind === 'accepted') return;
    else await outcomes.complete(msg.channel, msg.externalId, outcome);
  } catch (err) {
    // Handled already; only a later redelivery is affected (it waits out the claim, then is handled anew).
    ctx.deps.log.warn({ err, channel: msg.channel, externalId: msg.externalId }, 'could not record an ingress outcome');
  }
}

async function replay(stored: IngressOutcome, ctx: IngressContext): Promise<IngressOutcome> {
  ctx.deps.log.debug({ kind: stored.kind }, 'redelivered event: its first outcome replayed');
  if (stored.kind === 'accepted') return duplicate({ ...stored, duplicate: true, replayed: true }, ctx);
  return { ...stored, replayed: true };
}

async function duplicate(r: AcceptedOutcome, ctx: IngressContext): Promise<AcceptedOutcome> {
  await ctx.opts.onAccepted?.(r);
  return r;
}

/** Whether the command or approval-answer step would answer this message (they reuse the parse). */
function answeredHere(msg: InboundMessage, ctx: IngressContext): boolean {
  return commandIn(msg, ctx) !== null || approvalAnswerIn(msg, ctx) !== null || operatorCommandIn(msg, ctx) !== null;
}
