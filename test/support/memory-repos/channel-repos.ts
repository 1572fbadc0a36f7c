import type { AccessEntry, AccessRepository } from '../../../adapters/store/ports/access.js';
import type { ChannelStateRepository } from '../../../adapters/store/ports/channel-state.js';
import type { DeadDelivery, DeadDeliveryRecord, DeliveryFields, DeliveryRecord, DeliveryRepository } from '../../../adapters/store/ports/deliveries.js';
import type { WebhookDeadLetter, WebhookRepository, WebhookSubscriber } from '../../../adapters/store/ports/webhooks.js';
import { LeaseLostError } from '../../../kernel/lease-lost.js';
import { type AccessRecord, copy, json, type Tables } from './tables.js';

export class MemoryDeliveries implements DeliveryRepository {
  constructor(private readonly t: Tables) {}

  async get(turnId: string, channel: string, target: string): Promise<DeliveryRecord | undefined> {
    const d = this.t.deliveries.find((x) => x.turnId === turnId && x.channel === channel && x.target === target);
    return d && copy(d);
  }

  async forTurn(turnId: string): Promise<DeliveryRecord[]> {
    return this.t.deliveries
      .filter((d) => d.turnId === turnId)
      .sort((a, b) => a.id - b.id)
      .map(copy);
  }

  async record(turnId: string, channel: string, target: string, fields: DeliveryFields): Promise<DeliveryRecord> {
    if (fields.attempt !== undefined && this.t.turns.get(turnId)?.attempt !== fields.attempt)
      throw new LeaseLostError(`delivery ${channel}/${target} of turn ${turnId} not recorded: attempt ${fields.attempt} was overtaken`);
    const now = this.t.now();
    let d = this.t.deliveries.find((x) => x.turnId === turnId && x.channel === channel && x.target === target);
    if (!d) {
      d = {
        id: this.t.nextId(),
        turnId: turnId,
        channel,
        target,
        platformMessageId: fields.platformMessageId ?? null,
        state: fields.state,
        body: fields.body ?? null,
        updatedAt: now,
      };
      this.t.deliveries.push(d);
    } else
      Object.assign(d, {
        platformMessageId: fields.platformMessageId ?? d.platformMessageId,
        state: fields.state,
        body: fields.body ?? d.body,
        updatedAt: now,
      });
    return copy(d);
  }

  async deadLetter(x: DeadDelivery): Promise<void> {
    const row: DeadDeliveryRecord = {
      id: this.t.nextId(),
      turnId: x.turnId,
      conversationId: x.conversationId,
      channel: x.channel,
      code: x.code,
      error: x.error,
      attempts: x.attempts,
      createdAt: this.t.now(),
    };
    const i = this.t.deadDeliveries.findIndex((d) => d.turnId === x.turnId && d.channel === x.channel);
    if (i >= 0) this.t.deadDeliveries[i] = { ...row, id: this.t.deadDeliveries[i]!.id };
    else this.t.deadDeliveries.push(row);
  }

  async deadLetters(limit = 100): Promise<DeadDeliveryRecord[]> {
    return [...this.t.deadDeliveries]
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || b.id - a.id)
      .slice(0, limit)
      .map(copy);
  }
}

export class MemoryChannelState implements ChannelStateRepository {
  constructor(private readonly t: Tables) {}

  async get<T = unknown>(channel: string, key: string): Promise<T | undefined> {
    const k = JSON.stringify([channel, key]);
    return this.t.channelState.has(k) ? json(this.t.channelState.get(k) as T) : undefined;
  }

  async set(channel: string, key: string, value: unknown): Promise<void> {
    this.t.channelState.set(JSON.stringify([channel, key]), json(value));
  }

  async delete(channel: string, key: string): Promise<void> {
    this.t.channelState.delete(JSON.stringify([channel, key]));
  }
}

export class MemoryAccess implements AccessRepository {
  constructor(private readonly t: Tables) {}

  private find(channel: string, sender: string): AccessRecord | undefined {
    return this.t.access.find((a) => a.channel === channel && a.sender === sender);
  }

  async get(channel: string, senders: string | string[]): Promise<AccessEntry | undefined> {
    for (const s of typeof senders === 'string' ? [senders] : senders) {
      const a = this.find(channel, s);
      if (a) return row(a);
    }
    return undefined;
  }

  async pendingCount(channel: string): Promise<number> {
    const now = Date.now();
    return this.t.access.filter((a) => a.channel === channel && a.status === 'pending' && a.expiresAt && a.expiresAt.getTime() > now).length;
  }

  async requestPairing(channel: string, sender: string, code: string, ttlMs: number): Promise<AccessEntry> {
    const now = this.t.now();
    const expires = new Date(now.getTime() + ttlMs);
    let a = this.find(channel, sender);
    if (!a) {
      a = { channel, sender, status: 'pending', code, expiresAt: expires, decidedBy: null, updatedAt: now };
      this.t.access.push(a);
    } else {
      // An allowed sender is left alone, and the statement returns no row.
      if (a.status === 'allowed') return undefined as unknown as AccessEntry;
      const live = a.status === 'pending' && a.expiresAt !== null && a.expiresAt > now;
      Object.assign(a, { code: live ? a.code : code, expiresAt: live ? a.expiresAt : expires, status: 'pending', updatedAt: now });
    }
    return row(a);
  }

  async approvePairing(code: string, by: string): Promise<AccessEntry | undefined> {
    const now = this.t.now();
    const a = this.t.access.find((x) => x.code === code && x.status === 'pending' && x.expiresAt !== null && x.expiresAt > now);
    if (!a) return undefined;
    Object.assign(a, { status: 'allowed', decidedBy: by, code: null, updatedAt: now });
    return row(a);
  }

  async setStatus(channel: string, sender: string, status: AccessEntry['status'], by: string): Promise<void> {
    const now = this.t.now();
    const a = this.find(channel, sender);
    if (a) Object.assign(a, { status, decidedBy: by, code: null, updatedAt: now });
    else this.t.access.push({ channel, sender, status, code: null, expiresAt: null, decidedBy: by, updatedAt: now });
  }

  async list(status?: AccessEntry['status']): Promise<AccessEntry[]> {
    return this.t.access
      .filter((a) => status === undefined || a.status === status)
      .sort((a, b) => b.updatedAt.getTime() - a.updatedAt.getTime())
      .map(row);
  }
}

function row(a: AccessRecord): AccessEntry {
  const { updatedAt: _u, ...entry } = copy(a);
  return entry;
}

export class MemoryWebhooks implements WebhookRepository {
  constructor(private readonly t: Tables) {}

  async subscribers(): Promise<WebhookSubscriber[]> {
    return this.t.subscribers.map(({ id, url, secretEnv, events }) => ({ id, url, secretEnv, events: [...events] }));
  }

  async addSubscriber(s: WebhookSubscriber): Promise<void> {
    const existing = this.t.subscribers.find((x) => x.id === s.id);
    if (existing) Object.assign(existing, { url: s.url, secretEnv: s.secretEnv, events: json(s.events) });
    else this.t.subscribers.push({ ...json(s), createdAt: this.t.now() });
  }

  async deadLetter(subscriber: string, event: unknown, error: string, attempts: number): Promise<void> {
    this.t.deadLetters.push({ id: this.t.nextId(), subscriber, event: json(event), error, attempts, createdAt: this.t.now() });
  }

  async deadLetters(limit = 100): Promise<WebhookDeadLetter[]> {
    return [...this.t.deadLetters]
      .sort((a, b) => b.id - a.id)
      .slice(0, limit)
      .map(copy);
  }
}
