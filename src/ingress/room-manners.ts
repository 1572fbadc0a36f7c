/**
 * Manners in rooms, decided before any typing indicator or model call: addressedToMe over the
 * channel's facts, then what needs shared state — the bot-to-bot loop guard (at most
 * botLoopPerMinute answers to other bots per room and minute) and ambient mode (at most
 * ambientPerHour unprompted replies per room and hour, each approved by the classifier slot,
 * never two in a row: after one, the bot must be addressed in that room before the next).
 * The state is one channel_state row per room, written under a lock, so every ingress agrees.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { acquire, type LockService } from '../../adapters/lock/port.js';
import type { ChannelStateRepository } from '../../adapters/store/ports/channel-state.js';
import { type AddressedWhy, addressedToMe, type IgnoreReason, type RoomDecision, type RoomQuestion } from '../channel/addressed.js';

interface RoomState {
  /** When the bot answered another bot (ms) and to which message, the last minute's. */
  bot?: Array<{ t: number; id?: string }>;
  /** When the bot chimed in unasked (ms), the last hour's. */
  ambient?: number[];
  /** The bot's last reply in this room was unprompted. */
  lastUnprompted?: boolean;
  /** The message it was to (asked again, the same answer). */
  lastAmbientId?: string;
}

export interface RoomMannersDeps {
  state: ChannelStateRepository;
  locks: LockService;
  /** Whether the classifier slot says to chime in (never throws). */
  chimeIn(slot: string, text: string): Promise<boolean>;
  /** Told of every message left unanswered, and why (the metric). */
  ignored?(channel: string, why: IgnoreReason): void;
  log: Logger;
  now?: () => number;
}

const MINUTE = 60_000;
const HOUR = 3_600_000;

export class RoomManners {
  private readonly now: () => number;

  constructor(private readonly deps: RoomMannersDeps) {
    this.now = deps.now ?? Date.now;
  }

  async decide(channel: string, q: RoomQuestion): Promise<RoomDecision> {
    const d = await this.decideQuietly(channel, q);
    if (!d.answer) this.deps.ignored?.(channel, d.why);
    return d;
  }

  private async decideQuietly(channel: string, q: RoomQuestion): Promise<RoomDecision> {
    const { facts, policy } = q;
    const a = addressedToMe(facts, policy);
    if (a.addressed) {
      if (facts.fromBot) return this.botExchange(channel, q, policy.botLoopPerMinute, a.why);
      // Addressed in the room: the next unprompted reply may come again.
      if (policy.ambientPerHour > 0 && !facts.isDirect) await this.promptedReply(channel, q.room);
      return { answer: true, why: a.why };
    }
    if (a.why !== 'not_addressed' || policy.ambientPerHour === 0 || !policy.classifierSlot || facts.isDirect || facts.fromBot)
      return { answer: false, why: a.why };
    return this.ambient(channel, q, policy.ambientPerHour, policy.classifierSlot);
  }

  /** An allowed bot addressed us: answered unless this room had its share of bot exchanges this minute. */
  private async botExchange(channel: string, q: RoomQuestion, perMinute: number, why: AddressedWhy): Promise<RoomDecision> {
    let again = false;
    const out = await this.update(channel, q.room, (s, now) => {
      const recent = (s.bot ?? []).filter((e) => e.t > now - MINUTE);
      if (q.messageId && recent.some((e) => e.id === q.messageId)) return ((again = true), null);
      if (recent.length >= perMinute) return null;
      return { ...s, bot: [...recent, { t: now, ...(q.messageId ? { id: q.messageId } : {}) }] };
    });
    if (again) return { answer: true, why };
    if (out === 'busy') return { answer: false, why: 'busy' };
    return out ? { answer: true, why } : { answer: false, why: 'bot_loop' };
  }

  private async promptedReply(channel: string, room: string): Promise<void> {
    const key = roomKey(room);
    const s = await this.deps.state.get<RoomState>(channel, key);
    if (!s?.lastUnprompted) return;
    await this.update(channel, room, (cur) => (cur.lastUnprompted ? { ...cur, lastUnprompted: false } : null));
  }

  private async ambient(channel: string, q: RoomQuestion, perHour: number, slot: string): Promise<RoomDecision> {
    // Checked before the classifier (it costs a model call), and again under the lock after it.
    const refused = (s: RoomState, now: number): IgnoreReason | null => {
      if (s.lastUnprompted) return 'ambient_in_a_row';
      return (s.ambient ?? []).filter((t) => t > now - HOUR).length >= perHour ? 'ambient_budget' : null;
    };
    const cur = (await this.deps.state.get<RoomState>(channel, roomKey(q.room))) ?? {};
    if (q.messageId && cur.lastUnprompted && cur.lastAmbientId === q.messageId) return { answer: true, why: 'ambient' };
    const before = refused(cur, this.now());
    if (before) return { answer: false, why: before };
    if (!(await this.deps.chimeIn(slot, q.text))) return { answer: false, why: 'ambient_declined' };
    let why: IgnoreReason = 'ambient_budget';
    const out = await this.update(channel, q.room, (s, now) => {
      const r = refused(s, now);
      if (r) {
        why = r;
        return null;
      }
      return {
        ...s,
        ambient: [...(s.ambient ?? []).filter((t) => t > now - HOUR), now],
        lastUnprompted: true,
        ...(q.messageId ? { lastAmbientId: q.messageId } : {}),
      };
    });
    if (out === 'busy') return { answer: false, why: 'busy' };
    return out ? { answer: true, why: 'ambient' } : { answer: false, why };
  }

  /**
   * Reads, changes and writes a room's state under its lock. `change` returns the new state, or
   * null to refuse (nothing written). Returns whether it was written, or 'busy' when the lock stayed taken.
   */
  private async update(channel: string, room: string, change: (s: RoomState, now: number) => RoomState | null): Promise<boolean | 'busy'> {
    const key = roomKey(room);
    const lease = await acquire(this.deps.locks, `room-manners:${channel}:${key}`, 5_000, 3_000);
    if (!lease) {
      this.deps.log.warn({ channel, room }, 'room state lock stayed taken; not answering');
      return 'busy';
    }
    try {
      const next = change((await this.deps.state.get<RoomState>(channel, key)) ?? {}, this.now());
      if (!next) return false;
      await this.deps.state.set(channel, key, next);
      return true;
    } finally {
      await lease.release().catch((err: unknown) => this.deps.log.debug({ err }, 'room state lock release failed; it expires'));
    }
  }
}

/** The state key of a room: its id as the channel gave it, hashed when long (a mail thread's Message-ID). */
export function roomKey(room: string): string {
  return room.length <= 100 && /^[\w:.@/-]+$/.test(room) ? `room:${room}` : `room#${createHash('sha256').update(room).digest('hex').slice(0, 32)}`;
}
