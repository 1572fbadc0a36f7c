/** kernel/periodic-pass.ts: the schedule and handoff SLA sweeps' one timer loop. */
import { describe, expect, it } from 'vitest';
import { PeriodicPass } from '../kernel/periodic-pass.js';

describe('PeriodicPass', () => {
  it('never runs two passes at once, reports a failure without rejecting, and stop waits for the pass in flight', async () => {
    let runs = 0;
    let release!: () => void;
    const errors: unknown[] = [];
    const p = new PeriodicPass(
      () => {
        runs++;
        if (runs === 2) return Promise.reject(new Error('store down'));
        return new Promise<void>((r) => {
          release = r;
        });
      },
      60_000,
      (err) => errors.push(err),
    );
    const a = p.run();
    const b = p.run();
    expect(b).toBe(a);
    expect(runs).toBe(1);
    let stopped = false;
    const stopping = p.stop().then(() => {
      stopped = true;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(stopped).toBe(false);
    release();
    await stopping;
    await expect(p.run()).resolves.toBeUndefined();
    expect(runs).toBe(2);
    expect(errors.map((e) => (e as Error).message)).toEqual(['store down']);
  });
});
