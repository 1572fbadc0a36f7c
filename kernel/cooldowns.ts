/**
 * The cooldown store port: provider slot cooldowns, shared by every worker
 * (Redis) or held in process (embedded). The policy (how long) lives in
 * providers/, the stores in adapters/cooldowns/; the contract between them is
 * here, so providers/ needs nothing of adapters/.
 */
export interface CooldownState {
  /** Epoch ms until which the slot is cooling; 0 when it is not. */
  until: number;
  /** Consecutive failures, for the escalating schedule. */
  strikes: number;
  /** The error class of the last failure. */
  reason?: string;
}

export interface CooldownStore {
  get(slots: string[]): Promise<Map<string, CooldownState>>;
  /** Records a failure: the slot cools for ms; returns the new strike count. */
  fail(slot: string, ms: (strikes: number) => number, reason: string): Promise<CooldownState>;
  /** A success resets the slot. */
  clear(slot: string): Promise<void>;
  close(): Promise<void>;
}
