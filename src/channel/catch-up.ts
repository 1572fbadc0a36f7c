import { z } from 'zod';
import { ignoreError } from '../../kernel/errors.js';
import type { ChannelState } from './listen.js';

export const DEFAULT_OFFLINE_REPLY =
  'Sorry, I was offline when you sent this, and it is too old for me to answer now. Please send it again if it still matters.';

/**
 * channels.<name>.catchUp: what a channel does with the messages sent while the gateway was down
 * (found again when it comes back: Discord's history, Slack's conversations.history, the IMAP cursor).
 */
export const catchUpSchema = z
  .object({
    /** false: nothing sent while the gateway was down is looked at (email still reads its mailbox; see maxAgeMinutes). */
    enabled: z.boolean().default(true),
    /** Messages older than this (when they were sent) are not answered. */
    maxAgeMinutes: z.number().int().positive().default(60),
    /** At most this many of the newest missed messages per conversation place are answered; older ones are skipped. */
    maxMessages: z.number().int().positive().max(1_000).default(20),
    /** Skipped messages get one reply per place: true the default text, a string its own text, false none. */
    offlineReply: z.union([z.boolean(), z.string().min(1).max(1_000)]).default(true),
  })
  .strict()
  .prefault({});

export type CatchUpPolicy = z.infer<typeof catchUpSchema>;

/** Why a missed message was not answered (the `reason` of switchboard_messages_dropped_total). */
export type CatchUpSkip = 'catch_up_too_old' | 'catch_up_too_many';

export interface MissedMessage {
  /** When it was sent. */
  at: Date;
  /** Where a reply goes (a channel, a DM, a thread): one offline reply per place. */
  place: string;
}

export interface CatchUpPlan<T> {
  /** To hand to the ingress, oldest first. */
  answer: T[];
  skipped: Array<{ message: T; reason: CatchUpSkip }>;
  /** The newest skipped message of each place, when the policy sends an offline reply. */
  apologize: T[];
}

/** The offline reply's text, or null when the policy sends none. */
export function offlineReplyText(policy: CatchUpPolicy): string | null {
  if (policy.offlineReply === false) return null;
  return policy.offlineReply === true ? DEFAULT_OFFLINE_REPLY : policy.offlineReply;
}

/**
 * Which missed messages are answered (pure): per place, those younger than maxAgeMinutes, at most the
 * newest maxMessages of them, in the order they were sent; the rest are skipped.
 */
export function planCatchUp<T extends MissedMessage>(missed: readonly T[], policy: CatchUpPolicy, now: Date): CatchUpPlan<T> {
  const sorted = [...missed].sort((a, b) => a.at.getTime() - b.at.getTime());
  const oldest = now.getTime() - policy.maxAgeMinutes * 60_000;
  const byPlace = new Map<string, T[]>();
  const skipped: CatchUpPlan<T>['skipped'] = [];
  for (const m of sorted) {
    if (!policy.enabled || m.at.getTime() < oldest) skipped.push({ message: m, reason: 'catch_up_too_old' });
    else byPlace.set(m.place, [...(byPlace.get(m.place) ?? []), m]);
  }
  const keep = new Set<T>();
  for (const list of byPlace.values()) {
    for (const m of list.slice(0, Math.max(0, list.length - policy.maxMessages))) skipped.push({ message: m, reason: 'catch_up_too_many' });
    for (const m of list.slice(-policy.maxMessages)) keep.add(m);
  }
  const newestSkipped = new Map<string, T>();
  for (const { message } of skipped) {
    const prev = newestSkipped.get(message.place);
    if (!prev || prev.at.getTime() <= message.at.getTime()) newestSkipped.set(message.place, message);
  }
  return {
    answer: sorted.filter((m) => keep.has(m)),
    skipped,
    apologize: offlineReplyText(policy) === null ? [] : [...newestSkipped.values()],
  };
}

/**
 * The last message seen per place (a channel id, a conversation), kept in the channel state under one
 * key so the places are known after a restart. Writes are batched (at most one per flushMs); a crash
 * loses at most that much, which only means a few messages are fetched again (the ingress drops
 * them as duplicates).
 */
export class CatchUpCursors {
  private cursors: Record<string, string> = {};
  private loaded = false;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly state: ChannelState,
    private readonly channel: string,
    private readonly key: string,
    /** Orders two message ids of one place (negative: a before b). */
    private readonly compare: (a: string, b: string) => number,
    private readonly flushMs = 1_000,
  ) {}

  async load(): Promise<Record<string, string>> {
    if (!this.loaded) {
      const stored = (await this.state.get<Record<string, string>>(this.channel, `catchup:${this.key}`)) ?? {};
      // What was seen meanwhile (before the load finished) wins when it is newer.
      for (const [place, id] of Object.entries(stored)) if (!this.cursors[place] || this.compare(this.cursors[place]!, id) < 0) this.cursors[place] = id;
      this.loaded = true;
    }
    return { ...this.cursors };
  }

  /** A message of this place was handed to the ingress (or deliberately skipped). */
  seen(place: string, id: string): void {
    const prev = this.cursors[place];
    if (prev && this.compare(prev, id) >= 0) return;
    this.cursors[place] = id;
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.flushMs);
    this.timer.unref?.();
  }

  /** Stops following a place (a thread long quiet). */
  forget(place: string): void {
    if (!(place in this.cursors)) return;
    delete this.cursors[place];
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.flushMs);
    this.timer.unref?.();
  }

  /** Writes the cursors now (close() calls this). */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.loaded) return this.writing;
    const snapshot = { ...this.cursors };
    this.writing = this.writing
      .then(() => this.state.set(this.channel, `catchup:${this.key}`, snapshot))
      .catch(ignoreError('the next seen() or close() writes again; a lost write only means messages fetched twice'));
    return this.writing;
  }
}

/** Orders numeric ids (Discord snowflakes) without losing precision. */
export function compareSnowflakes(a: string, b: string): number {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Orders Slack timestamps ("1700000000.000100") without losing precision. */
export function compareSlackTs(a: string, b: string): number {
  const [as, af = ''] = a.split('.');
  const [bs, bf = ''] = b.split('.');
  const d = compareSnowflakes(as || '0', bs || '0');
  return d !== 0 ? d : compareSnowflakes(af.padEnd(6, '0') || '0', bf.padEnd(6, '0') || '0');
}
