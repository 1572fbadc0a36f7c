/** Whether a sender may talk to the bot on a channel, as the access table holds it. */
export interface AccessEntry {
  channel: string;
  /** The sender's identity within the channel (kernel/identity.ts localId: `T1:U1` on Slack, the id elsewhere); on Slack a bare user id allowed by an operator names that user in any team. */
  sender: string;
  status: 'allowed' | 'pending' | 'denied';
  code: string | null;
  expiresAt: Date | null;
  decidedBy: string | null;
}

/** Who may talk to the bot on a channel: allowed, denied, or pending with a pairing code. */
export interface AccessRepository {
  /** The row of a sender, by the forms that may name it, most specific first (kernel/identity.ts entryForms): the first form with a row wins. */
  get(channel: string, senders: string | string[]): Promise<AccessEntry | undefined>;
  /** Pending, unexpired pairing requests on a channel. */
  pendingCount(channel: string): Promise<number>;
  /**
   * A pairing request, atomically: keeps an unexpired pending code (and its
   * deadline), else issues `code` for ttlMs, turning a denied sender pending.
   * An allowed sender is left alone and no row comes back (callers check get() first).
   */
  requestPairing(channel: string, sender: string, code: string, ttlMs: number): Promise<AccessEntry>;
  /** Allows the sender of a pending, unexpired code, once; undefined for any other code. */
  approvePairing(code: string, by: string): Promise<AccessEntry | undefined>;
  /** Sets a sender's status (an operator's decision), clearing any pairing code. */
  setStatus(channel: string, sender: string, status: AccessEntry['status'], by: string): Promise<void>;
  /** Every row, optionally of one status, most recently changed first. */
  list(status?: AccessEntry['status']): Promise<AccessEntry[]>;
}
