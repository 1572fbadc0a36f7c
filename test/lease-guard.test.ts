/**
 * The lease guard alone (src/turn/lease-guard.ts), with a clock the test moves,
 * and the parts that ask it: the sink gate, the event publisher, the fenced deliveries.
 */
import { describe, expect, it } from 'vitest';
import { MemoryBus } from '../adapters/bus/memory.js';
import { errorCode } from '../kernel/errors.js';
import type { TurnEvent } from '../kernel/turn-events.js';
import { conversationTopic, EventPublisher } from '../src/event-publisher.js';
import { fencedDeliveries } from '../src/fenced-deliveries.js';
import { LeaseGuard } from '../src/turn/lease-guard.js';
import { leaseGate } from '../src/turn/sinks/lease-gate.js';
import { MemoryDeliveries } from './support/memory-repos/channel-repos.js';
import { Tables } from './support/memory-repos/tables.js';
import { RecordingSink, silentLog } from './support/turn-fakes.js';

function clock(start = 1_000_000) {
  const c = { t: start, now: () => c.t };
  return c;
}

const delta = (d: string): TurnEvent => ({ type: 'text_delta', turnId: 't1', delta: d });

describe('the lease guard', () => {
  it('holds while renewed in time; a renewal that says "not yours" aborts its signal with lease_lost, for good', async () => {
    const c = clock();
    const g = new LeaseGuard('tok', 3_000, c.now);
    c.t += 2_000;
    await g.renew(async () => true);
    c.t += 2_500; // 4.5 s after the start, 2.5 s after the renewal
    expect(g.check()).toBe(true);
    expect(g.signal.aborted).toBe(false);

    await g.renew(async () => false);
    expect(g.signal.aborted).toBe(true);
    expect(errorCode(g.signal.reason)).toBe('lease_lost');
    expect(g.check()).toBe(false);
    // Nothing brings it back, and a lost lease is not renewed any more.
    let asked = 0;
    await g.renew(async () => ++asked > 0);
    g.renewed(c.t);
    expect(asked).toBe(0);
    expect(g.check()).toBe(false);
    expect(g.lost).toBe(true);
  });

  it('a lease taken before the drain began (a turn opened at accept) counts from the statement that took it, not from the drain', () => {
    const c = clock();
    const sentAt = c.t;
    c.t += 2_500; // the drain starts 2.5 s after the accept statement took the lease
    const g = new LeaseGuard('tok', 3_000, c.now, sentAt);
    expect(g.until).toBe(sentAt + 3_000);
    c.t += 600; // the store's lease has run out by now: so has the guard
    expect(g.check()).toBe(false);
    expect(errorCode(g.signal.reason)).toBe('lease_lost');
  });

  it('a renewal that fails with an error keeps the lease until its deadline, and the next one succeeding extends it', async () => {
    const c = clock();
    const g = new LeaseGuard('tok', 3_000, c.now);
    c.t += 1_000;
    await expect(g.renew(async () => Promise.reject(new Error('connection reset')))).rejects.toThrow('connection reset');
    expect(g.check()).toBe(true);
    expect(g.until).toBe(c.t + 2_000);
    c.t += 1_000;
    await g.renew(async () => true);
    expect(g.until).toBe(c.t + 3_000);
  });

  it('is lost once the clock passes the last successful renewal + the lease duration (a frozen process), before anything else is done', async () => {
    const c = clock();
    const g = new LeaseGuard('tok', 3_000, c.now);
    let aborted: unknown;
    g.signal.addEventListener('abort', () => (aborted = g.signal.reason));
    c.t += 1_000;
    await g.renew(async () => true);
    c.t += 3_000; // exactly at the deadline: still valid
    expect(g.check()).toBe(true);
    // The process was frozen past the deadline: the next check (or renewal tick) loses it, before anything else.
    c.t += 1;
    let asked = 0;
    await g.renew(async () => ++asked > 0);
    expect(asked).toBe(0);
    expect(g.check()).toBe(false);
    expect(errorCode(aborted)).toBe('lease_lost');
  });

  it('a late answer to an older renewal never moves the deadline back', () => {
    const c = clock();
    const g = new LeaseGuard('tok', 3_000, c.now);
    g.renewed(c.t + 2_000);
    g.renewed(c.t + 500);
    expect(g.until).toBe(c.t + 5_000);
  });
});

describe('what asks the lease guard', () => {
  it('the sink gate passes events while the lease holds and drops every event and the flush after it is lost', async () => {
    const c = clock();
    const g = new LeaseGuard('tok', 3_000, c.now);
    const inner = new RecordingSink();
    const sink = leaseGate(inner, g, silentLog);
    sink.push(delta('before '));
    await sink.flush?.();
    c.t += 3_001;
    sink.push(delta('after'));
    sink.push({ type: 'done', turnId: 't1', text: 'before after', finishReason: 'stop', usage: { input: 0, output: 0, totalTokens: 0, cost: 0 } });
    await sink.flush?.();
    expect(inner.events).toEqual([delta('before ')]);
    expect(inner.flushes).toEqual([1]);
    expect(g.signal.aborted).toBe(true);
  });

  it('the event publisher drops what is still queued once its gate says no', async () => {
    const bus = new MemoryBus();
    const topic = conversationTopic('k1');
    const seen: TurnEvent[] = [];
    const sub = await bus.subscribe(topic, (e) => void seen.push(e as TurnEvent));
    let open = true;
    const publisher = new EventPublisher(bus, topic, () => open);
    publisher.push(delta('one'));
    await publisher.drain();
    open = false;
    publisher.push(delta('two'));
    await publisher.drain();
    await new Promise((r) => setTimeout(r, 20));
    expect(seen).toMatchObject([delta('one')]);
    expect(seen).toHaveLength(1);
    sub.close();
  });

  it('fenced deliveries record while the lease holds and the turn is at this attempt; otherwise nothing is written (lease_lost)', async () => {
    const tables = new Tables();
    const repo = new MemoryDeliveries(tables);
    tables.turns.set('t1', { id: 't1', attempt: 1 } as never);
    const c = clock();
    const g = new LeaseGuard('tok', 3_000, c.now);
    const fenced = fencedDeliveries(repo, 't1', 1, g);
    await fenced.record('t1', 'slack', 'msg:C1:0', { state: 'streaming', body: 'a' });
    // A newer attempt took the turn over: the store refuses the older attempt's write.
    tables.turns.set('t1', { id: 't1', attempt: 2 } as never);
    await expect(fenced.record('t1', 'slack', 'msg:C1:0', { state: 'delivered', body: 'b' })).rejects.toMatchObject({ code: 'lease_lost' });
    // The lease ran out here: not even asked.
    tables.turns.set('t1', { id: 't1', attempt: 1 } as never);
    c.t += 5_000;
    await expect(fenced.record('t1', 'slack', 'msg:C1:0', { state: 'delivered', body: 'c' })).rejects.toMatchObject({ code: 'lease_lost' });
    expect((await repo.get('t1', 'slack', 'msg:C1:0'))?.body).toBe('a');
    // Another key (an opt-out) is not this turn's: written as it is.
    await fenced.record('optout', 'sms', '+15550001', { state: 'opted_out' });
    expect((await repo.get('optout', 'sms', '+15550001'))?.state).toBe('opted_out');
  });
});
