/** A scheduled run that answers NOTHING_TO_SAY shows nothing on the channel; any other answer reaches it whole and in order. */
import { describe, expect, it } from 'vitest';
import type { TurnEvent } from '../kernel/turn-events.js';
import { nothingToSayGate, scheduledBatch } from '../src/turn/sinks/nothing-to-say.js';

const done = (text: string) => ({ type: 'done', turnId: 't1', text, finishReason: 'stop', usage: { inputTokens: 1, outputTokens: 1 } }) as unknown as TurnEvent;
const delta = (d: string): TurnEvent => ({ type: 'text_delta', turnId: 't1', delta: d });

/** What the channel was shown: the platform's side, recorded. */
function channel() {
  const shown: TurnEvent[] = [];
  let closed = 0;
  return { sink: { push: (e: TurnEvent) => void shown.push(e), flush: async () => void closed++ }, shown, closed: () => closed };
}

describe('nothing to say', () => {
  it('sends nothing for the sentinel, even streamed in pieces', async () => {
    const c = channel();
    const gate = nothingToSayGate(c.sink);
    for (const e of [delta('NOTHING'), delta('_TO_'), delta('SAY')]) gate.push(e);
    await gate.flush?.(); // the turn flushes, then pushes its done
    gate.push(done('NOTHING_TO_SAY'));
    expect(c.shown).toEqual([]);
    expect(c.closed()).toBe(0); // closing is what posts a callback or an email: not done either
  });

  it('lets a real answer through in order once it is not the sentinel', async () => {
    const c = channel();
    const gate = nothingToSayGate(c.sink);
    for (const e of [delta('NOT'), delta('e: standup at 10'), done('NOTe: standup at 10')]) gate.push(e);
    expect(c.shown.map((e) => e.type)).toEqual(['text_delta', 'text_delta', 'done']);
    expect(c.shown.map((e) => (e.type === 'text_delta' ? e.delta : '')).join('')).toBe('NOTe: standup at 10');
  });

  it('applies to scheduled runs only', () => {
    expect(scheduledBatch([{ externalId: 'schedule:sch_1:2026-06-01T10:00:00.000Z' }])).toBe(true);
    expect(scheduledBatch([{ externalId: 'schedule:sch_1:x' }, { externalId: 'slack-ev-1' }])).toBe(false);
    expect(scheduledBatch([])).toBe(false);
  });
});
