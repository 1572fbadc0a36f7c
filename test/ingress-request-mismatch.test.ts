/**
 * The ingress refuses a message whose external id is in the inbox already but whose requestHash
 * differs (the HTTP API's Idempotency-Key reused with another body), on both paths: the
 * redelivery step's look-up, and the accept step's duplicate (two deliveries racing past the
 * look-up). The same hash, or none on either side, is the duplicate it always was.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { MemoryQueue } from '../adapters/queue/memory.js';
import type { InboundMessage } from '../kernel/envelope.js';
import type { DrainJob } from '../kernel/jobs.js';
import { configSchema } from '../src/config.js';
import { Ingress, type IngressOutcome } from '../src/ingress.js';
import { memoryRepositories } from './support/memory-repos/index.js';

const msg = (text: string, requestHash?: string): InboundMessage => ({
  channel: 'http',
  externalId: 'key-1',
  conversationKey: 'http/p/c/-',
  sender: { id: 'p' },
  text,
  attachments: [],
  receivedAt: new Date(),
  ...(requestHash ? { requestHash } : {}),
});

function ingress(opts: { raceLookUp?: boolean } = {}) {
  const { inbox, conversations } = memoryRepositories();
  // raceLookUp: the look-up misses, as for a delivery that checked before the first one's write landed.
  const store = {
    accept: inbox.accept.bind(inbox),
    inboxByExternalId: opts.raceLookUp ? async () => undefined : inbox.inboxByExternalId.bind(inbox),
    waitingCount: conversations.waitingCount.bind(conversations),
  };
  const queue = new MemoryQueue<DrainJob>(configSchema.parse({}).queue);
  const accepted: number[] = [];
  const receive = (m: InboundMessage): Promise<IngressOutcome> =>
    new Ingress(store, queue, pino({ level: 'silent' })).receive(m, { authenticated: true, onAccepted: (a) => void accepted.push(a.inboxId) });
  return { receive, accepted, close: () => queue.close() };
}

describe.each([false, true])('a reused external id with another request (look-up misses: %s)', (raceLookUp) => {
  it('is refused as request_mismatch and not bound to the first message', async () => {
    const ig = ingress({ raceLookUp });
    const first = await ig.receive(msg('hello', 'h1'));
    expect(first).toMatchObject({ kind: 'accepted', duplicate: false });
    const other = await ig.receive(msg('something else', 'h2'));
    expect(other).toMatchObject({ kind: 'refused', code: 'request_mismatch' });
    expect(ig.accepted).toHaveLength(1);
    await ig.close();
  });

  it('with the same hash, or a hash on one side only, is the duplicate', async () => {
    const ig = ingress({ raceLookUp });
    const first = await ig.receive(msg('hello', 'h1'));
    for (const again of [msg('hello', 'h1'), msg('hello')]) {
      const r = await ig.receive(again);
      expect(r).toMatchObject({ kind: 'accepted', duplicate: true });
      expect(r.kind === 'accepted' && r.inboxId).toBe(first.kind === 'accepted' && first.inboxId);
    }
    await ig.close();
  });
});
