/**
 * The email deliverer against the SMTP sink, with an in-memory delivery store:
 * one mail per part of a turn, never twice across retried or resumed
 * attempts, transient failures retried with the same Message-ID, permanent
 * ones given up.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryRecord, DeliveryStore } from '../adapters/store/deliveries.js';
import type { EmailReplyTo } from '../channels/email/compose.js';
import { parseEmailConfig } from '../channels/email/config.js';
import { EmailDeliverer } from '../channels/email/deliver.js';
import type { TurnEvent } from '../kernel/turn-events.js';
import type { DeliverContext, TurnTarget } from '../src/channel/index.js';
import { SmtpSink } from './fakes/email-smtp.js';

/** A turn event without its turn id (distributes over the union). */
type Ev = TurnEvent extends infer E ? (E extends TurnEvent ? Omit<E, 'turnId'> : never) : never;

class MemoryDeliveries {
  rows = new Map<string, DeliveryRecord>();
  private id = 0;
  async get(turnId: string, channel: string, target: string) {
    return this.rows.get(`${turnId}|${channel}|${target}`);
  }
  async record(turnId: string, channel: string, target: string, f: { platformMessageId?: string | null; state: string; body?: string | null }) {
    const key = `${turnId}|${channel}|${target}`;
    const prev = this.rows.get(key);
    const row: DeliveryRecord = {
      id: prev?.id ?? ++this.id,
      turnId: turnId,
      channel,
      target,
      platformMessageId: f.platformMessageId ?? prev?.platformMessageId ?? null,
      state: f.state,
      body: f.body ?? prev?.body ?? null,
      updatedAt: new Date(),
    };
    this.rows.set(key, row);
    return row;
  }
}

describe('email deliverer', () => {
  let sink: SmtpSink;
  let deliverer: EmailDeliverer;
  let ctx: DeliverContext;
  let store: MemoryDeliveries;

  beforeAll(async () => {
    sink = new SmtpSink();
    await sink.start();
    const cfg = parseEmailConfig(
      {
        address: 'bot@example.test',
        imap: { host: 'unused', user: 'bot' },
        smtp: { host: '127.0.0.1', port: sink.port, auth: false, retry: { attempts: 2, minMs: 20, maxMs: 50 } },
      },
      { EMAIL_IMAP_PASSWORD: 'x' },
    );
    store = new MemoryDeliveries();
    const log = pino({ level: 'silent' });
    ctx = { deliveries: store as unknown as DeliveryStore, state: undefined as never, log };
    deliverer = new EmailDeliverer(cfg);
    await deliverer.start(ctx);
  });
  afterAll(async () => {
    await deliverer?.close();
    await sink?.close();
  });

  const target = (turnId: string, attempt: number): TurnTarget<EmailReplyTo> => ({
    turnId,
    attempt,
    conversation: { id: 'c1', key: 'k', channel: 'email', agent: 'default' },
    replyTo: { to: 'ann@example.com', subject: 'Question', messageId: `<q-${turnId}@example.com>`, references: [] },
  });
  const run = async (turnId: string, attempt: number, events: Array<Ev>) => {
    const d = deliverer.open(target(turnId, attempt), ctx);
    for (const e of events) d.event({ ...e, turnId } as TurnEvent);
    await d.close();
  };
  const mailsFor = (turnId: string) => sink.mails.filter((m) => m.inReplyTo === `<q-${turnId}@example.com>`);

  it('sends the answer once, even when the turn runs again', async () => {
    await run('t1', 1, [
      { type: 'text_delta', delta: 'first ' },
      { type: 'reset', reason: 'x' },
      { type: 'text_delta', delta: 'Hello **Ann**' },
    ]);
    await run('t1', 2, [{ type: 'text_delta', delta: 'Hello again, differently' }]);
    const mails = mailsFor('t1');
    expect(mails).toHaveLength(1);
    expect(mails[0]!.text.trim()).toBe('Hello **Ann**'); // the withdrawn text is gone
    expect(mails[0]!.subject).toBe('Re: Question');
  });

  it('a parked turn mails its request, and the resumed turn its answer', async () => {
    const approval = { code: 'K7Q2P', tool: 'shell_exec', tier: 'caution', expiresAt: new Date().toISOString(), args: {}, reasons: [] };
    // The turn asks as an event only; the deliverer writes the request as text, codes included.
    const ask: Array<Ev> = [{ type: 'approval_requested', approval }];
    await run('t2', 1, ask);
    await run('t2', 2, ask); // crashed before parking: asks again, with the same code
    await run('t2', 3, [
      { type: 'text_delta', delta: 'Done: exit code 0' },
      { type: 'notice', text: 'answered by the fallback model' },
    ]);
    const mails = mailsFor('t2');
    expect(mails).toHaveLength(2);
    expect(mails[0]!.text.trim()).toMatch(/^Approval needed \(caution\) to run shell_exec .* code K7Q2P\. Reply YES K7Q2P to approve or NO K7Q2P to refuse/);
    expect(mails[0]!.text.match(/Approval needed/g)).toHaveLength(1);
    expect(mails[1]!.text.trim()).toBe('Done: exit code 0\n\n_answered by the fallback model_');
    expect(mails[0]!.messageId).not.toBe(mails[1]!.messageId);
  });

  it('transient failures: retried, then the turn fails and its retry resends with the same Message-ID', async () => {
    sink.failNext(451, 421); // both attempts of the first delivery
    const d = deliverer.open(target('t3', 1), ctx);
    d.event({ type: 'text_delta', turnId: 't3', delta: 'eventually' });
    await expect(d.close()).rejects.toThrow();
    const row = await store.get('t3', 'email', 'reply');
    expect(row).toMatchObject({ state: 'sending' });
    await run('t3', 2, [{ type: 'text_delta', delta: 'eventually' }]);
    const mails = mailsFor('t3');
    expect(mails).toHaveLength(1);
    expect(mails[0]!.messageId).toBe(row!.platformMessageId);
    expect((await store.get('t3', 'email', 'reply'))!.state).toBe('sent');
  });

  it('a permanent refusal is given up without failing the turn', async () => {
    sink.failNext(550);
    await run('t4', 1, [{ type: 'text_delta', delta: 'nope' }]);
    expect(mailsFor('t4')).toHaveLength(0);
    expect((await store.get('t4', 'email', 'reply'))!.state).toBe('failed');
  });
});
