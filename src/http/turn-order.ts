import type { BusTurnEvent } from '../../kernel/turn-events.js';

/**
 * Puts one turn's bus events back in order (kernel/turn-events.ts TurnEventOrder): a seq already
 * seen for the turn's attempt and run is a repeat (the Redis client resent a write) and is dropped;
 * an event past a skipped seq waits until the hole is filled (from the topic's history) or given
 * up on; an older attempt's events are dropped once a newer attempt has begun. Events without a
 * seq (an older gateway, or made up from the store) pass as they come.
 */
export class TurnEventOrdering {
  /** The newest attempt seen. */
  attempt = 0;
  private readonly runs = new Map<string, RunState>();

  /** Feeds one event; returns the events that may be handled now, in order. */
  accept(e: BusTurnEvent): BusTurnEvent[] {
    if (e.type === 'turn_start') this.newAttempt(e.attempt);
    if (e.seq === undefined || e.run === undefined) return [e];
    const attempt = e.attempt ?? 1;
    if (attempt < this.attempt) return [];
    this.newAttempt(attempt);
    let run = this.runs.get(e.run);
    if (!run) this.runs.set(e.run, (run = { last: 0, waiting: new Map(), broken: false }));
    if (e.seq <= run.last || run.waiting.has(e.seq)) return [];
    if (run.broken && e.type !== 'text_delta' && e.type !== 'reset') {
      // Past a hole that could not be filled: text no longer adds up, the rest of the events do.
      run.last = e.seq;
      return [e];
    }
    if (run.broken) {
      run.last = e.seq;
      return [];
    }
    run.waiting.set(e.seq, e);
    return this.release(run);
  }

  /** True while some event waits for a skipped seq. */
  get holes(): boolean {
    for (const r of this.runs.values()) if (r.waiting.size) return true;
    return false;
  }

  /**
   * The holes could not be filled (the stream lost them): what waited is handled now, without its
   * text (the reply's missing text comes from the finished turn's whole answer instead).
   */
  giveUp(): BusTurnEvent[] {
    const out: BusTurnEvent[] = [];
    for (const run of this.runs.values()) {
      if (!run.waiting.size) continue;
      run.broken = true;
      for (const seq of [...run.waiting.keys()].sort((a, b) => a - b)) {
        const e = run.waiting.get(seq)!;
        run.last = seq;
        if (e.type !== 'text_delta' && e.type !== 'reset') out.push(e);
      }
      run.waiting.clear();
    }
    return out;
  }

  private newAttempt(attempt: number): void {
    if (attempt <= this.attempt) return;
    this.attempt = attempt;
    this.runs.clear();
  }

  private release(run: RunState): BusTurnEvent[] {
    const out: BusTurnEvent[] = [];
    for (let e = run.waiting.get(run.last + 1); e; e = run.waiting.get(run.last + 1)) {
      run.waiting.delete(run.last + 1);
      run.last++;
      out.push(e);
    }
    return out;
  }
}

interface RunState {
  /** The last seq handled. */
  last: number;
  /** Events past a hole, by seq. */
  waiting: Map<number, BusTurnEvent>;
  /** A hole was given up on. */
  broken: boolean;
}

/**
 * For a consumer that shows a topic's events as they come (the console's live view): true for an
 * event not seen before, false for a repeat (the same turn, attempt, run and seq). No reordering.
 */
export function firstSighting(): (e: BusTurnEvent) => boolean {
  const last = new Map<string, number>();
  return (e) => {
    if (e.seq === undefined || e.run === undefined) return true;
    const key = `${e.turnId}:${e.attempt ?? 1}:${e.run}`;
    if (e.seq <= (last.get(key) ?? 0)) return false;
    if (last.size > 10_000) last.clear();
    last.set(key, e.seq);
    return true;
  };
}
