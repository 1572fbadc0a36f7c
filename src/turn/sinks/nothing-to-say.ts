import type { TurnEvent } from '../../../kernel/turn-events.js';
import { isNothingToSay, NOTHING_TO_SAY } from '../../schedules/policy.js';
import type { TurnSink } from '../ports.js';

/** Whether a turn answers only scheduled runs' messages (src/schedules/scheduler.ts writes them as schedule:<id>:<tick>). */
export const scheduledBatch = (batch: ReadonlyArray<{ externalId: string }>): boolean =>
  batch.length > 0 && batch.every((m) => m.externalId.startsWith('schedule:'));

/**
 * In front of a scheduled turn's channel delivery: while the reply could still be the
 * NOTHING_TO_SAY sentinel, its events are held; once it is something else they go on in order;
 * a reply that is the sentinel is never shown on the channel (the run reads as nothing_to_say).
 */
export function nothingToSayGate(inner: TurnSink): TurnSink {
  let holding = true;
  let text = '';
  let suppressed = false;
  const held: TurnEvent[] = [];
  const release = () => {
    holding = false;
    for (const e of held.splice(0)) inner.push(e);
  };
  return {
    push: (e) => {
      if (suppressed) return;
      if (!holding) return inner.push(e);
      if (e.type === 'done') {
        if (isNothingToSay(e.text)) {
          held.length = 0;
          suppressed = true;
          return;
        }
        release();
        return inner.push(e);
      }
      held.push(e);
      if (e.type === 'text_delta') {
        text += e.delta;
        const t = text.trim();
        if (t && !NOTHING_TO_SAY.startsWith(t) && !isNothingToSay(t)) release();
      }
    },
    // Nothing was shown: the delivery is not closed either (closing is what posts a webhook callback or an email).
    // The turn flushes before its done: a reply held so far that is the sentinel is dropped there.
    flush: async () => {
      if (holding && isNothingToSay(text)) suppressed = true;
      if (suppressed) {
        held.length = 0;
        return;
      }
      if (holding) release();
      await inner.flush?.();
    },
    ...(inner.attempt ? { attempt: (a: Parameters<NonNullable<TurnSink['attempt']>>[0]) => inner.attempt!(a) } : {}),
  };
}
