/**
 * The HTTP API's turn follower over the in-memory bus: bus events are numbered per turn
 * (EventPublisher), and what comes out of the follower adds up to the answer exactly once, whatever
 * the bus repeats, skips or already said before the follower joined.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryBus } from '../adapters/bus/memory.js';
import type { GatewayStore } from '../adapters/store/ports/index.js';
import type { BusTurnEvent, TurnEvent } from '../kernel/turn-events.js';
import { conversationTopic, EventPublisher } from '../src/event-publisher.js';
import { TurnWaiter } from '../src/http/turn-follower.js';
import { firstSighting, TurnEventOrdering } from '../src/http/turn-order.js';
import { eventually } from './support/gateway.js';

const topic = conversationTopic('http:test:conv');
// The follower reads the store only to find a finished turn when the bus says nothing: never here.
const store = { inboxRow: async () => undefined } as unknown as GatewayStore;
const usage = { input: 1, output: 1, totalTokens: 2, cost: 0 };
const open: TurnWaiter[] = [];

afterEach(() => {
  for (const w of open.splice(0)) w.close();
});

async function follower(bus: MemoryBus, inboxId: number, turnId?: string): Promise<TurnWaiter> {
  const w = await TurnWaiter.open(bus, store, topic, 60_000);
  open.push(w);
  w.bind(inboxId, turnId);
  return w;
}

/** Everything the follower hands out until done: the text as a client would show it. */
async function answer(w: TurnWaiter): Promise<{ text: string; done: string | undefined; events: TurnEvent[] }> {
  const events: TurnEvent[] = [];
  let text = '';
  let done: string | undefined;
  for (;;) {
    const e = await w.next(2_000);
    if (!e) break;
    events.push(e);
    if (e.type === 'turn_start' && e.attempt > 1) text = '';
    if (e.type === 'text_delta') text += e.delta;
    if (e.type === 'done') {
      done = e.text;
      break;
    }
  }
  return { text, done, events };
}

const start = (attempt = 1): TurnEvent => ({ type: 'turn_start', turnId: 't1', conversationId: 'c1', inboxIds: [7], attempt });
const delta = (d: string): TurnEvent => ({ type: 'text_delta', turnId: 't1', delta: d });
const done = (text: string): TurnEvent => ({ type: 'done', turnId: 't1', text, finishReason: 'stop', usage });
const tick = () => new Promise((r) => setTimeout(r, 5));

describe('bus event numbering', () => {
  it('numbers each turn from 1 per attempt, after merging deltas', async () => {
    const bus = new MemoryBus();
    const seen: BusTurnEvent[] = [];
    await bus.subscribe(topic, (e) => seen.push(e as BusTurnEvent));
    const p = new EventPublisher(bus, topic);
    p.push(start());
    p.push(delta('a')); // leaves with turn_start; b and c pile up (and merge) behind that write
    p.push(delta('b'));
    p.push(delta('c'));
    p.push(done('abc'));
    await p.drain();
    p.push(start(2));
    await p.drain();
    expect(seen.map((e) => [e.type, e.attempt, e.seq])).toEqual([
      ['turn_start', 1, 1],
      ['text_delta', 1, 2],
      ['text_delta', 1, 3],
      ['done', 1, 4],
      ['turn_start', 2, 1],
    ]);
    expect(seen.filter((e) => e.type === 'text_delta').map((e) => (e as { delta: string }).delta)).toEqual(['a', 'bc']);
    expect(new Set(seen.map((e) => e.run)).size).toBe(1);
  });

  it("holds a turn's opening event back for its first delta (one bus write for both), and sends it alone when nothing follows", async () => {
    const bus = new MemoryBus();
    const writes: string[][] = [];
    const counting = Object.assign(Object.create(bus) as MemoryBus, {
      publish: async (t: string, ...events: unknown[]) => {
        writes.push(events.map((e) => (e as TurnEvent).type));
        await bus.publish(t, ...events);
      },
    });
    const p = new EventPublisher(counting, topic);
    p.push(start());
    await tick();
    p.push(delta('first'));
    await p.drain();
    expect(writes).toEqual([['turn_start', 'text_delta']]);
    // A turn whose next event is far off (a slow model) still shows it started, a moment later.
    writes.length = 0;
    p.push(start(2));
    await eventually(async () => writes.length > 0);
    expect(writes).toEqual([['turn_start']]);
    // And a drain (the turn returned) never leaves one behind.
    writes.length = 0;
    p.push(start(3));
    await p.drain();
    expect(writes).toEqual([['turn_start']]);
  });
});

describe('the turn follower', () => {
  it('drops an event whose seq it has seen (a resent write): the answer comes out once', async () => {
    const bus = new MemoryBus();
    const w = await follower(bus, 7);
    const run = 'r1';
    const ev = (e: TurnEvent, seq: number): BusTurnEvent => ({ ...e, attempt: 1, seq, run });
    await bus.publish(topic, ev(start(), 1), ev(delta('Hello, '), 2), ev(delta('world'), 3));
    // The Redis client resends the writes it lost the answers of: the same seqs again.
    await bus.publish(topic, ev(delta('Hello, '), 2), ev(delta('world'), 3), ev(delta('!'), 4), ev(delta('!'), 4), ev(done('Hello, world!'), 5));
    const got = await answer(w);
    expect(got.text).toBe('Hello, world!');
    expect(got.done).toBe('Hello, world!');
    expect(got.events.filter((e) => e.type === 'text_delta')).toHaveLength(3);
  });

  it('holds an event past a skipped seq and fills the hole from the topic history', async () => {
    const bus = new MemoryBus();
    const ev = (e: TurnEvent, seq: number): BusTurnEvent => ({ ...e, attempt: 1, seq, run: 'r1' });
    const w = await follower(bus, 7, 't1');
    // seq 2 reaches the history but not this subscriber (published before it joined the topic in a real bus).
    const history = bus as unknown as { recent: Map<string, string[]> };
    await bus.publish(topic, ev(start(), 1));
    history.recent.get(topic)!.push(JSON.stringify(ev(delta('one '), 2)));
    await bus.publish(topic, ev(delta('two'), 3), ev(done('one two'), 4));
    const got = await answer(w);
    expect(got.text).toBe('one two');
    // From the history itself, in order (not pieced together from the whole answer at the end).
    expect(got.events.flatMap((e) => (e.type === 'text_delta' ? [e.delta] : []))).toEqual(['one ', 'two']);
  });

  it('joining a running turn: what was said before comes first, then the live rest, once', async () => {
    const bus = new MemoryBus();
    const p = new EventPublisher(bus, topic);
    p.push(start());
    p.push(delta('The answer '));
    await p.drain();
    p.push(delta('is '));
    await p.drain();
    const w = await follower(bus, 7, 't1');
    await tick();
    p.push(delta('42.'));
    p.push(done('The answer is 42.'));
    await p.drain();
    const got = await answer(w);
    expect(got.text).toBe('The answer is 42.');
    expect(got.events.filter((e) => e.type === 'turn_start')).toHaveLength(1);
  });

  it('a newer attempt replaces the older one, and the older attempt’s late events are dropped', async () => {
    const bus = new MemoryBus();
    const w = await follower(bus, 7);
    const a1 = (e: TurnEvent, seq: number): BusTurnEvent => ({ ...e, attempt: 1, seq, run: 'r1' });
    const a2 = (e: TurnEvent, seq: number): BusTurnEvent => ({ ...e, attempt: 2, seq, run: 'r2' });
    await bus.publish(topic, a1(start(1), 1), a1(delta('Hel'), 2));
    await bus.publish(topic, a2(start(2), 1), a2(delta('Hello'), 2), a1(delta('lo from the dead'), 3), a2(done('Hello'), 3));
    const got = await answer(w);
    expect(got.text).toBe('Hello');
  });

  it('a hole the history does not hold: the text comes from the whole answer at the end, never garbled', async () => {
    const bus = new MemoryBus();
    const w = await follower(bus, 7);
    const ev = (e: TurnEvent, seq: number): BusTurnEvent => ({ ...e, attempt: 1, seq, run: 'r1' });
    await bus.publish(topic, ev(start(), 1), ev(delta('A '), 2));
    // seq 3 ("B ") is lost for good (a write that failed while Redis was down).
    await bus.publish(topic, ev(delta('C'), 4), ev(done('A B C'), 5));
    const got = await answer(w);
    expect(got.text).toBe('A B C');
  });
});

describe('TurnEventOrdering and firstSighting', () => {
  it('passes events without numbering, drops repeats', () => {
    const o = new TurnEventOrdering();
    expect(o.accept(start())).toHaveLength(1);
    const e: BusTurnEvent = { ...delta('x'), attempt: 1, seq: 2, run: 'r' };
    expect(o.accept({ ...start(), attempt: 1, seq: 1, run: 'r' })).toHaveLength(1);
    expect(o.accept(e)).toHaveLength(1);
    expect(o.accept(e)).toHaveLength(0);
    const fresh = firstSighting();
    expect([fresh(e), fresh(e), fresh({ ...e, seq: 3 })]).toEqual([true, false, true]);
  });
});
