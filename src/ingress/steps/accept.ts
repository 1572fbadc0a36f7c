import { QueueUnavailableError } from '../../../adapters/errors/types.js';
import type { AcceptResult, StartedTurn } from '../../../adapters/store/ports/index.js';
import { jobTrace } from '../../telemetry/tracer.js';
import { faultPoint } from '../../turn/test-fault.js';
import type { IngressContext, IngressStep } from '../context.js';
import type { AcceptedOutcome } from '../outcome.js';
import { requestMismatch } from '../request-mismatch.js';

/**
 * The durable inbox write, then (after the later steps) a drain enqueued for the
 * conversation. Once written the message is kept whatever happens to the queue:
 * an enqueue that fails or does not answer within enqueueTimeoutMs (Redis went
 * down after the queue-available step) is queue_unavailable (503, the platform
 * delivers again, the redelivery finds the row), and the workers' recovery sweep
 * drains the conversation once Redis is back.
 */
export const accept: IngressStep = {
  name: 'accept',
  async run(msg, ctx, next) {
    // The message span's traceparent goes with the row: a turn answering several messages links each (src/telemetry/worker-spans.ts).
    const { traceparent } = jobTrace();
    const meta = traceparent ? { traceparent } : {};
    const agent = ctx.opts.agent ?? 'default';
    const store = ctx.deps.store;
    // A conversation minted for this message opens its first turn in the same statement when this
    // process's worker has a slot for it now (src/turn-opening.ts): the drain then starts here from it.
    const ticket = ctx.opts.newConversation && store.acceptOpening ? ctx.deps.opener?.reserve(msg) : undefined;
    const sentAt = Date.now();
    let accepted: AcceptResult;
    let started: StartedTurn | undefined;
    try {
      if (ticket) ({ accepted, started } = await store.acceptOpening!(msg, agent, meta, ticket.open));
      else accepted = await store.accept(msg, agent, meta);
    } catch (err) {
      ticket?.release();
      throw err;
    }
    if (ticket && !started) ticket.release();
    if (started) faultPoint('turn-opened');
    // A concurrent first delivery of the same id won the write: the same check as the redelivery step's.
    const mismatch = accepted.duplicate ? requestMismatch(msg, accepted) : null;
    if (mismatch) return mismatch;
    ctx.accepted = accepted;
    const outcome: AcceptedOutcome = { kind: 'accepted', ...accepted, ...(ctx.notice && !accepted.duplicate ? { notice: ctx.notice } : {}) };
    try {
      // Before the worker is woken: a caller following the turn subscribes here.
      await ctx.opts.onAccepted?.(outcome);
      await next();
    } catch (err) {
      // As with a drain never enqueued: the message waits for the recovery sweep, its turn not yet opened.
      if (started) await ticket!.putBack(accepted.conversationId, started);
      throw err;
    }
    if (started && (await ticket!.start(accepted.conversationId, started, sentAt))) return outcome;
    if (!accepted.duplicate) await enqueue(accepted.conversationId, ctx);
    return outcome;
  },
};

async function enqueue(conversationId: string, ctx: IngressContext): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      // The message's span (src/ingress/index.ts) goes with the job: the worker's spans continue its trace.
      // No other job can exist yet for a conversation minted for this message, so its first drain needs no
      // deduplication (on BullMQ, five commands fewer: the key set here, read and deleted when it ends); a
      // later drain of it dedups as usual, and the lease in Postgres still lets one drain at a time run turns.
      ctx.deps.queue.add({ conversationId, ...jobTrace() }, ctx.opts.newConversation ? {} : { dedupKey: conversationId }),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('enqueue timed out')), ctx.deps.enqueueTimeoutMs ?? 3_000);
      }),
    ]);
  } catch (err) {
    ctx.deps.log.warn({ err, conversation: conversationId }, 'enqueue failed; the message is kept and the recovery sweep will drain this conversation');
    throw new QueueUnavailableError(err);
  } finally {
    clearTimeout(timer);
  }
}
