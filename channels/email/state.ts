import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { ChannelStateStore } from '../../adapters/store/channel-state.js';

const CHANNEL = 'email';

/** Where the listener is in a mailbox: everything up to lastUid (in this UIDVALIDITY) is handled. */
export interface Cursor {
  uidValidity: string;
  lastUid: number;
  /** After a UIDVALIDITY change: only mail received since then is looked at again. */
  since?: string;
}

export class CursorStore {
  constructor(
    private readonly state: ChannelStateStore,
    private readonly key: string,
  ) {}

  get(): Promise<Cursor | undefined> {
    return this.state.get<Cursor>(CHANNEL, `cursor:${this.key}`);
  }

  set(c: Cursor): Promise<void> {
    return this.state.set(CHANNEL, `cursor:${this.key}`, c);
  }
}

interface LeaseValue {
  owner: string;
  expiresAt: number;
}

/**
 * Best-effort single poller per mailbox, kept in the channel state (which has
 * no compare-and-set): write our claim, wait `settleMs`, read it back; the
 * last writer holds it. Renewed while held; a dead holder's claim expires.
 * Two processes starting within the same few milliseconds could both poll
 * briefly: the inbox's unique Message-ID keeps that from answering twice.
 */
export class PollerLease {
  readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

  constructor(
    private readonly state: ChannelStateStore,
    private readonly key: string,
    private readonly ttlMs: number,
    private readonly settleMs: number,
  ) {}

  private get stateKey(): string {
    return `lease:${this.key}`;
  }

  /** The current holder other than us, if its claim is alive. */
  async holder(): Promise<string | undefined> {
    const cur = await this.state.get<LeaseValue>(CHANNEL, this.stateKey);
    return cur && cur.owner !== this.owner && cur.expiresAt > Date.now() ? cur.owner : undefined;
  }

  async acquire(): Promise<boolean> {
    if (await this.holder()) return false;
    await this.state.set(CHANNEL, this.stateKey, { owner: this.owner, expiresAt: Date.now() + this.ttlMs } satisfies LeaseValue);
    if (this.settleMs) await new Promise((r) => setTimeout(r, this.settleMs));
    const after = await this.state.get<LeaseValue>(CHANNEL, this.stateKey);
    return after?.owner === this.owner;
  }

  /** false: another process holds it now. */
  async renew(): Promise<boolean> {
    const cur = await this.state.get<LeaseValue>(CHANNEL, this.stateKey);
    if (cur && cur.owner !== this.owner) return false;
    await this.state.set(CHANNEL, this.stateKey, { owner: this.owner, expiresAt: Date.now() + this.ttlMs } satisfies LeaseValue);
    return true;
  }

  async release(): Promise<void> {
    const cur = await this.state.get<LeaseValue>(CHANNEL, this.stateKey);
    if (cur?.owner === this.owner) await this.state.delete(CHANNEL, this.stateKey);
  }
}
