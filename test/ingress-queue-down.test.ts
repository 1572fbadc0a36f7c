/**
 * The ingress with its queue down (issue #21): a queue whose connection is not ready refuses
 * before anything is written; one that takes the message's enqueue and never answers (Redis died
 * after the check) is given up on after enqueueTimeoutMs, the inbox row stays for the recovery
 * sweep, and both are queue_unavailable (503 with Retry-After on the HTTP API).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyUnavailable } from '../adapters/errors/types.js';
import type { JobQueue } from '../adapters/queue/port.js';
import type { Gateway } from '../app/gateway.js';
import type { DrainJob } from '../kernel/jobs.js';
import { Ingress } from '../src/ingress.js';
import { startGateway, testConfig } from './support/gateway.js';

function queue(available: boolean, added: DrainJob[]): JobQueue<DrainJob> {
  return {
    available: async () => available,
    add: async (job) => {
      added.push(job);
      await new Promise(() => {}); // a command waiting for a reconnect that does not come
    },
    process: () => {},
    counts: async () => ({ waiting: 0, active: 0, delayed: 0, failed: 0 }),
    ping: async () => {},
    close: async () => {},
  };
}

describe('the ingress with its queue down', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await startGateway(testConfig(null, {}));
  });
  afterAll(async () => {
    await gw?.close();
  });

  const msg = (externalId: string) => ({
    channel: 'test',
    externalId,
    conversationKey: `test/-/queue-down/-`,
    sender: { id: 'u1' },
    text: 'hello',
    attachments: [],
    receivedAt: new Date(),
  });
  const inboxRows = async (externalId: string) =>
    (await gw.infra.store.db.query(`select id from inbox where channel = 'test' and external_id = $1`, [externalId])).rows.length;

  it('a queue that is not ready: queue_unavailable, nothing written, nothing enqueued', async () => {
    const added: DrainJob[] = [];
    const ingress = new Ingress(gw.infra.store, queue(false, added), gw.log);
    const err = await ingress.receive(msg('down-1'), { authenticated: true }).catch((e: unknown) => e);
    expect(classifyUnavailable(err)?.code).toBe('queue_unavailable');
    expect(await inboxRows('down-1')).toBe(0);
    expect(added).toEqual([]);
  });

  it('an enqueue that never answers: queue_unavailable after the timeout, the inbox row kept for the sweep', async () => {
    const added: DrainJob[] = [];
    const ingress = new Ingress(gw.infra.store, queue(true, added), gw.log, { enqueueTimeoutMs: 200 });
    const err = await ingress.receive(msg('hang-1'), { authenticated: true }).catch((e: unknown) => e);
    expect(classifyUnavailable(err)?.code).toBe('queue_unavailable');
    expect(await inboxRows('hang-1')).toBe(1);
    expect(added).toHaveLength(1);
    // The platform delivers it again: the same row, no second message.
    const again = await ingress.receive(msg('hang-1'), { authenticated: true });
    expect(again).toMatchObject({ kind: 'accepted', duplicate: true });
    expect(await inboxRows('hang-1')).toBe(1);
  });
});
