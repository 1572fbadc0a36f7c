import type { AccessRepository, AccessRow } from '../../../adapters/store/ports/access.js';
import type { ChannelStateRepository } from '../../../adapters/store/ports/channel-state.js';
import type { DeadDelivery, DeadDeliveryRow, DeliveryRepository, DeliveryRow } from '../../../adapters/store/ports/deliveries.js';
import type { DeadLetterRow, SubscriberRow, WebhookRepository } from '../../../adapters/store/ports/webhooks.js';
import { type AccessRecord, copy, json, type Tables } from './tables.js';

export class MemoryDeliveries implements DeliveryRepository {
  constructor(private readonly t: Tables) {}

  async get(turnId: string, channel: string, target: string): Promise<DeliveryRow | undefined> {
    const d = this.t.deliveries.find((x) => x.turn_id === turnId && x.channel === channel && x.target === target);
    return d && copy(d);
  }

  async forTurn(turnId: string): Promise<DeliveryRow[]> {
    return this.t.deliveries
      .filter((d) => d.turn_id === turnId)
      .sort((a, b) => a.id - b.id)
      .map(copy);
  }

  async record(
    turnId: string,
    channel: string,
    target: string,
    fields: { platformMessageId?: string | null; state: string; body?: string | null },
  ): Promise<DeliveryRow> {
    const now = this.t.now();
    let d = this.t.deliveries.find((x) => x.turn_id === turnId && x.channel === channel && x.target === target);
    if (!d) {
      d = {
        id: this.t.nextId(),
        turn_id: turnId,
        channel,
        target,
        platform_message_id: fields.platformMessageId ?? null,
        state: fields.state,
        body: fields.body ?? null,
        updated_at: now,
      };
      this.t.deliveries.push(d);
    } else
      Object.assign(d, {
        platform_message_id: fields.platformMessageId ?? d.platform_message_id,
        state: fields.state,
        body: fields.body ?? d.body,
        updated_at: now,
      });
    return copy(d);
  }

  async deadLetter(x: DeadDelivery): Promise<void> {
    const row: DeadDeliveryRow = {
      id: this.t.nextId(),
      turn_id: x.turnId,
      conversation_id: x.conversationId,
      channel: x.channel,
      code: x.code,
      error: x.error,
      attempts: x.attempts,
      created_at: this.t.now(),
    };
    const i = this.t.deadDeliveries.findIndex((d) => d.turn_id === x.turnId && d.channel === x.channel);
    if (i >= 0) this.t.deadDeliveries[i] = { ...row, id: this.t.deadDeliveries[i]!.id };
    else this.t.deadDeliveries.push(row);
  }

  async deadLetters(limit = 100): Promise<DeadDeliveryRow[]> {
    return [...this.t.deadDeliveries]
      .sort((a, b) => b.created_at.getTime() - a.created_at.getTime() || b.id - a.id)
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

  async get(channel: string, senders: string | string[]): Promise<AccessRow | undefined> {
    for (const s of typeof senders === 'string' ? [senders] : senders) {
      const a = this.find(channel, s);
      if (a) return row(a);
    }
    return undefined;
  }

  async pendingCount(channel: string): Promise<number> {
    const now = Date.now();
    return this.t.access.filter((a) => a.channel === channel && a.status === 'pending' && a.expires_at && a.expires_at.getTime() > now).length;
  }

  async requestPairing(channel: string, sender: string, code: string, ttlMs: number): Promise<AccessRow> {
    const now = this.t.now();
    const expires = new Date(now.getTime() + ttlMs);
    let a = this.find(channel, sender);
    if (!a) {
      a = { channel, sender, status: 'pending', code, expires_at: expires, decided_by: null, updated_at: now };
      this.t.access.push(a);
    } else {
      // An allowed sender is left alone, and the statement returns no row.
      if (a.status === 'allowed') return undefined as unknown as AccessRow;
      const live = a.status === 'pending' && a.expires_at !== null && a.expires_at > now;
      Object.assign(a, { code: live ? a.code : code, expires_at: live ? a.expires_at : expires, status: 'pending', updated_at: now });
    }
    return row(a);
  }

  async approvePairing(code: string, by: string): Promise<AccessRow | undefined> {
    const now = this.t.now();
    const a = this.t.access.find((x) => x.code === code && x.status === 'pending' && x.expires_at !== null && x.expires_at > now);
    if (!a) return undefined;
    Object.assign(a, { status: 'allowed', decided_by: by, code: null, updated_at: now });
    return row(a);
  }

  async setStatus(channel: string, sender: string, status: AccessRow['status'], by: string): Promise<void> {
    const now = this.t.now();
    const a = this.find(channel, sender);
    if (a) Object.assign(a, { status, decided_by: by, code: null, updated_at: now });
    else this.t.access.push({ channel, sender, status, code: null, expires_at: null, decided_by: by, updated_at: now });
  }

  async list(status?: AccessRow['status']): Promise<AccessRow[]> {
    return this.t.access
      .filter((a) => status === undefined || a.status === status)
      .sort((a, b) => b.updated_at.getTime() - a.updated_at.getTime())
      .map(row);
  }
}

function row(a: AccessRecord): AccessRow {
  return copy(a);
}

export class MemoryWebhooks implements WebhookRepository {
  constructor(private readonly t: Tables) {}

  async subscribers(): Promise<SubscriberRow[]> {
    return this.t.subscribers.map(({ id, url, secret_env, events }) => ({ id, url, secret_env, events: [...events] }));
  }

  async addSubscriber(s: SubscriberRow): Promise<void> {
    const existing = this.t.subscribers.find((x) => x.id === s.id);
    if (existing) Object.assign(existing, { url: s.url, secret_env: s.secret_env, events: json(s.events) });
    else this.t.subscribers.push({ ...json(s), created_at: this.t.now() });
  }

  async deadLetter(subscriber: string, event: unknown, error: string, attempts: number): Promise<void> {
    this.t.deadLetters.push({ id: this.t.nextId(), subscriber, event: json(event), error, attempts, created_at: this.t.now() });
  }

  async deadLetters(limit = 100): Promise<DeadLetterRow[]> {
    return [...this.t.deadLetters]
      .sort((a, b) => b.id - a.id)
      .slice(0, limit)
      .map(copy);
  }
}
