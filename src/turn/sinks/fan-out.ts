import type { Logger } from 'pino';
import type { TurnEvent } from '../../../kernel/turn-events.js';
import type { Attempt } from '../../../providers/chain.js';
import type { TurnSink } from '../ports.js';

export interface NamedSink {
  /** For the log line when it fails. */
  name: string;
  sink: TurnSink;
}

/**
 * One sink over several, in order. A sink whose push (or attempt) throws is
 * logged and dropped for the rest of the turn: it never breaks the turn or the
 * sinks after it. flush() awaits each remaining sink in order and lets a failure
 * through: that is how a channel whose delivery gave up asks for the turn again
 * (only without a delivery queue: with one, the delivery sink hands the reply over instead).
 */
export function fanOut(sinks: ReadonlyArray<NamedSink | undefined>, log: Logger): TurnSink {
  let live = sinks.filter((s): s is NamedSink => !!s);
  const each = (what: string, call: (s: TurnSink) => void) => {
    for (const s of live) {
      try {
        call(s.sink);
      } catch (err) {
        log.warn({ err, sink: s.name, event: what }, 'a turn event sink failed; it gets no more events of this turn');
        live = live.filter((x) => x !== s);
      }
    }
  };
  return {
    push: (e: TurnEvent) => each(e.type, (s) => s.push(e)),
    attempt: (a: Attempt) => each('attempt', (s) => s.attempt?.(a)),
    flush: async () => {
      for (const s of live) await s.sink.flush?.();
    },
  };
}
