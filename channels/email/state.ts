import type { ChannelState as ChannelStateStore, Lease, Leases as LockService } from '../../src/channel/index.js';

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

/**
 * Exactly one poller per mailbox across every process: the gateway's lock
 * service (Redis SET NX with expiry; in process when embedded), held while
 * polling and renewed; a dead holder's lease expires after ttlMs.
 */
export class PollerLease {
  private lease: Lease | null = null;

  constructor(
    private readonly locks: LockService,
    private readonly key: string,
    private readonly ttlMs: number,
  ) {}

  async acquire(): Promise<boolean> {
    this.lease ??= await this.locks.tryAcquire(`email-poller:${this.key}`, this.ttlMs);
    return this.lease !== null;
  }

  /** false: the lease was lost (expired and taken by another process). */
  async renew(): Promise<boolean> {
    if (!this.lease) return false;
    const ok = await this.lease.renew();
    if (!ok) this.lease = null;
    return ok;
  }

  async release(): Promise<void> {
    const l = this.lease;
    this.lease = null;
    await l?.release();
  }
}
