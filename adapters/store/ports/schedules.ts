/** Schedules and their runs (adapters/store/schedules.ts, migration 024_schedules.sql). */
export type ScheduleKind = 'cron' | 'once';

export interface NewSchedule {
  conversationId: string;
  kind: ScheduleKind;
  cron?: string;
  at?: Date;
  tz: string;
  prompt: string;
  runsPerDay?: number;
  /** The most tokens this schedule's runs may use per local day. */
  tokensPerDay?: number;
  /** A yes/no question the cheap check slot answers before a run (schedules.checkSlot). */
  check?: string;
  nextAt: Date | null;
  createdBy: string;
}

export interface ScheduleRecord {
  id: string;
  conversationId: string;
  conversationKey: string;
  channel: string;
  kind: ScheduleKind;
  cron: string | null;
  at: string | null;
  tz: string;
  prompt: string;
  runsPerDay: number | null;
  tokensPerDay: number | null;
  check: string | null;
  nextAt: string | null;
  createdBy: string;
  createdAt: string;
  lastRun: { tick: string; status: RunStatus; at: string } | null;
}

/**
 * What became of a run. The task (the turn) and its delivery are told apart: a turn that
 * answered but whose reply the delivery queue gave up on is `undelivered`, never delivered.
 */
export type RunStatus = 'pending' | 'skipped' | 'over_budget' | 'running' | 'delivering' | 'delivered' | 'undelivered' | 'nothing_to_say' | 'failed';

export interface RunRecord {
  id: number;
  scheduleId: string;
  tick: string;
  dueAt: string;
  status: RunStatus;
  coalesced: number;
  turnId: string | null;
}

export interface PendingRun {
  id: number;
  scheduleId: string;
  tick: Date;
  coalesced: number;
  conversationId: string;
  conversationKey: string;
  channel: string;
  owner: string | null;
  agent: string;
  prompt: string;
  tz: string;
  runsPerDay: number | null;
  tokensPerDay: number | null;
  check: string | null;
}

/** What a run may be set to by the scheduler (the rest is read from its turn and deliveries). */
export type SettableRunStatus = 'pending' | 'enqueued' | 'over_budget' | 'nothing_to_say';

/** Runs fired since the start of the recipient's day, and the tokens their turns used. */
export interface FiredSince {
  schedule: number;
  recipient: number;
  scheduleTokens: number;
  recipientTokens: number;
  /** Runs queued or running (their turn not finished), whose tokens are not counted yet. */
  scheduleRunning: number;
  recipientRunning: number;
}

export interface ScheduleRepository {
  create(s: NewSchedule): Promise<ScheduleRecord>;
  get(id: string): Promise<ScheduleRecord | undefined>;
  list(conversationId?: string): Promise<ScheduleRecord[]>;
  remove(id: string, by: string): Promise<boolean>;
  runs(scheduleId: string, limit?: number): Promise<RunRecord[]>;
  due(now: Date, limit?: number): Promise<Array<{ id: string; kind: ScheduleKind; cron: string | null; tz: string; nextAt: Date }>>;
  claimTick(scheduleId: string, tick: Date, next: Date | null, run: { dueAt: Date; status: 'pending' | 'skipped'; coalesced: number }): Promise<boolean>;
  takeDue(now: Date, limit?: number): Promise<PendingRun[]>;
  firedSince(scheduleId: string, conversationId: string, since: Date): Promise<FiredSince>;
  setRun(id: number, fields: { status: SettableRunStatus; dueAt?: Date; inboxId?: number }): Promise<void>;
  reclaimStale(before: Date): Promise<number>;
  undelivered(): Promise<RunRecord[]>;
  lastReplyTo(conversationId: string): Promise<Record<string, unknown> | undefined>;
}
