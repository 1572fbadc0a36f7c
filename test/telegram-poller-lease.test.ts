/**
 * Two ingress processes configured with the same bot: one polls (Telegram would end a second
 * getUpdates with 409 Conflict), the other stands by on the shared lease and takes over when the
 * first stops. The real grammY client against the fake Bot API; each listener gets a ListenContext
 * that records what it received and shares one lock service, as two processes share Redis.
 */
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryLocks } from '../adapters/lock/memory.js';
import { parseTelegramConfig } from '../channels/telegram/config.js';
import { TelegramListener } from '../channels/telegram/listen.js';
import type { InboundMessage } from '../kernel/envelope.js';
import type { ListenContext } from '../src/channel/index.js';
import { BOT_TOKEN, FakeTelegram } from './fakes/telegram-server.js';
import { eventually } from './support/gateway.js';

const fake = new FakeTelegram();
const locks = new MemoryLocks();
afterAll(async () => {
  await fake.close();
  await locks.close();
});

function context(received: InboundMessage[]): ListenContext {
  const refuse = () => {
    throw new Error('not used here');
  };
  return {
    async receive(m) {
      received.push(m);
      return { kind: 'accepted', inboxId: received.length, conversationId: 'c', duplicate: false };
    },
    answerApproval: refuse,
    isOperator: () => false,
    pendingApprovals: async () => [],
    checkAccess: async () => ({ allowed: true }),
    mount: refuse,
    authenticate: refuse,
    workersAlive: async () => true,
    conversationExists: async () => false,
    follow: refuse,
    state: { get: refuse, set: refuse, delete: refuse } as never,
    deliveries: { get: refuse, record: refuse } as never,
    leases: locks,
    shouldAnswer: async () => ({ answer: true, why: 'direct' }),
    dropped: () => {},
    log: pino({ level: 'silent' }),
  } as ListenContext;
}

describe('telegram: one poller per bot', () => {
  it('the second process stands by, never polls, and takes over when the first stops', async () => {
    await fake.start();
    const chat = fake.addChat({ id: 3001, type: 'private' });
    const cfg = parseTelegramConfig({ apiRoot: fake.apiRoot, pollTimeoutSeconds: 1, registerCommands: false }, { TELEGRAM_BOT_TOKEN: BOT_TOKEN });
    const a: InboundMessage[] = [];
    const b: InboundMessage[] = [];
    const first = new TelegramListener(cfg);
    await first.start(context(a));
    await eventually(async () => fake.callsOf('getUpdates').length > 0);
    const second = new TelegramListener(cfg);
    await second.start(context(b));
    await eventually(async () => second.health().message?.includes('standing by'));
    fake.userMessage({ chat, from: { id: 3001, first_name: 'Ann' }, text: 'to the poller' });
    await eventually(async () => a.length === 1);
    expect(b).toEqual([]);
    await first.close();
    fake.userMessage({ chat, from: { id: 3001, first_name: 'Ann' }, text: 'after the hand-over' });
    await eventually(async () => b.length === 1, 20_000);
    expect(b[0]!.text).toBe('after the hand-over');
    expect(a.map((m) => m.text)).toEqual(['to the poller']);
    expect(second.health()).toEqual({ ok: true });
    await second.close();
  }, 60_000);
});
