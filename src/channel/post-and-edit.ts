import type { Logger } from 'pino';
import type { DeliveryRepository } from '../../adapters/store/ports/deliveries.js';
import { ignoreError } from '../../kernel/errors.js';
import { LeaseLostError } from '../../kernel/lease-lost.js';
import { splitFenced } from '../../kernel/text-split.js';
import { ChannelDeliveryError } from './delivery-error.js';

/**
 * The one throttled post-and-edit engine of the channels that edit their
 * messages (Slack without native streaming, Discord): the platform says what
 * the reply is now (`show`), the engine posts its first message at once and
 * edits each message at most once per `editIntervalMs` (what changed in between
 * is coalesced; later messages wait too, so text never shows out of order).
 * Past `maxChars` the reply continues in new messages, split prefix-stable and
 * fence-aware (splitFenced): what was posted never changes except the last
 * part, and a code fence cut in two is closed and reopened. All I/O runs in
 * one loop, one request at a time.
 *
 * Resumable: the messages a turn posted are kept in the deliveries store (one
 * row per turn, channel and place), so a retried attempt edits them instead of
 * posting again; a turn resumed after it parked (its approval was answered)
 * starts a new reply ("phase") under the one that asked.
 */
export interface Draft {
  /** The reply text, in the platform's markup (split here). */
  text: string;
  /** A line shown under the text in the last message while the turn runs (a status); never split. */
  status?: string | null;
  /** The line shown there once the turn ended (a call waiting for approval). */
  statusAtEnd?: string | null;
  /** Platform data for the last message (Discord components), compared as JSON. */
  extra?: unknown;
  /** The last message's text when the turn ends with no text but something to show ("(no reply)"). */
  empty?: string;
}

export interface Part {
  index: number;
  content: string;
  extra: unknown;
}

/** A platform's side: its API calls. Each may throw; `permanent` says which errors retrying cannot help. */
export interface EditPlatform {
  post(part: Part, phase: number, salt: string): Promise<{ id: string; content?: string }>;
  /** Returns 'gone' when the message was deleted meanwhile (it is posted again). */
  edit(id: string, part: Part): Promise<'ok' | 'gone'>;
  remove(id: string): Promise<void>;
  permanent(err: unknown): boolean;
  /** The platform's code for a failure (`channel_not_found`), for the log and the dead letter. */
  code?(err: unknown): string;
  /** A turn resumed after parking: the request message left by the earlier phase (clear its buttons...). */
  resumedAfterPark?(lastId: string): Promise<void>;
}

export interface PostAndEditOptions {
  maxChars: number;
  editIntervalMs: number;
  /** How long close() keeps retrying a failing platform before it throws (a delivery job takes over; 0: at the first failure). */
  deliveryTimeoutMs: number;
  /** Shown while the reply has no text yet, or in messages a reset emptied. */
  placeholder?: string;
  /** The text of one message from its chunk of the reply and the status line. */
  render?: (chunk: string, status: string | null) => string;
  split?: (text: string, max: number) => string[];
  log: Logger;
  /**
   * Asked right before every platform call (DeliverContext.fence): once false, the engine makes no
   * more calls (an edit queued before the worker froze included) and close() rejects with lease_lost.
   */
  fence?: () => boolean;
}

/** Where the engine keeps what it posted: the turn's row in the deliveries store. */
export interface PostedRecord {
  load(): Promise<{ phase: number; ids: string[]; parked: boolean } | null>;
  save(phase: number, ids: string[], state: 'streaming' | 'delivered' | 'parked'): Promise<void>;
}

/** The deliveries-store record: one row (turn, channel, key) with {phase, ids} as its body. */
export function deliveriesRecord(store: DeliveryRepository, turnId: string, channel: string, key: string, log: Logger): PostedRecord {
  return {
    async load() {
      const row = await store.get(turnId, channel, key);
      if (!row) return null;
      const body = JSON.parse(row.body ?? '{}') as { phase?: unknown; ids?: unknown };
      const ids = Array.isArray(body.ids) ? body.ids.filter((x): x is string => typeof x === 'string') : [];
      return { phase: typeof body.phase === 'number' ? body.phase : 0, ids, parked: row.state === 'parked' };
    },
    async save(phase, ids, state) {
      try {
        await store.record(turnId, channel, key, { platformMessageId: ids[0] ?? null, state, body: JSON.stringify({ phase, ids }) });
      } catch (err) {
        log.warn({ err }, 'could not record what this turn posted');
      }
    },
  };
}

interface Posted {
  id: string;
  /** What the message shows (null: unknown, posted by an earlier attempt). */
  content: string | null;
  extra: string;
  editedAt: number;
}

export class PostAndEdit {
  private draft: Draft = { text: '' };
  private msgs: Posted[] = [];
  private phase = 0;
  private closing = false;
  private dead = false;
  private dirty = true;
  private wake: (() => void) | undefined;
  private readonly loop: Promise<void>;

  private readonly platform: EditPlatform;

  constructor(
    platform: EditPlatform,
    private readonly record: PostedRecord | null,
    private readonly opts: PostAndEditOptions,
    /** A first attempt has nothing to resume. */
    resume: boolean,
  ) {
    this.platform = opts.fence ? fencedPlatform(platform, opts.fence) : platform;
    this.loop = this.run(resume);
    this.loop.catch(ignoreError('surfaced by close(), which awaits it'));
  }

  /** What the reply is now. Cheap: the loop picks it up when the throttle allows. */
  show(d: Draft): void {
    this.draft = d;
    this.kick();
  }

  /** Brings the platform in line with the last draft (final: no status, extras deleted), then resolves. */
  close(parked = false): Promise<void> {
    this.parkedAtEnd = parked;
    this.closing = true;
    this.kick();
    return this.loop;
  }

  /** The ids of the messages posted, in order. */
  get ids(): string[] {
    return this.msgs.map((m) => m.id);
  }

  private parkedAtEnd = false;

  private kick(): void {
    this.dirty = true;
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private async run(resume: boolean): Promise<void> {
    if (resume) await this.load();
    let failingSince: number | null = null;
    let backoff = 500;
    for (;;) {
      if (this.dead) return;
      const final = this.closing;
      this.dirty = false;
      let wait: number;
      try {
        wait = await this.sync(final);
        failingSince = null;
        backoff = 500;
      } catch (err) {
        if (err instanceof LeaseLostError) {
          // Another attempt runs the turn now and owns these messages: not one call more from this one.
          this.opts.log.warn({ err }, 'the lease is lost: this delivery makes no more platform calls');
          this.dead = true;
          throw err;
        }
        const platformCode = this.platform.code?.(err);
        if (this.platform.permanent(err)) {
          this.opts.log.error({ err, platformCode }, "the platform refused the reply; giving up on this turn's delivery");
          this.dead = true;
          throw new ChannelDeliveryError(`the platform refused the reply: ${platformCode ?? (err as Error)?.message ?? String(err)}`, {
            retryable: false,
            ...(platformCode ? { platformCode } : {}),
            cause: err,
          });
        }
        failingSince ??= Date.now();
        if (this.closing && Date.now() - failingSince >= this.opts.deliveryTimeoutMs) {
          this.opts.log.warn({ err, platformCode }, 'delivery kept failing; handing it to the delivery queue');
          throw new ChannelDeliveryError(`delivery kept failing: ${platformCode ?? (err as Error)?.message ?? String(err)}`, {
            retryable: true,
            ...(platformCode ? { platformCode } : {}),
            cause: err,
          });
        }
        this.opts.log.warn({ err, retryInMs: backoff }, 'delivery failed; retrying');
        wait = backoff;
        backoff = Math.min(backoff * 2, 10_000);
      }
      if (wait < 0) {
        if (final) {
          if (this.record && this.msgs.length) await this.record.save(this.phase, this.ids, this.parkedAtEnd ? 'parked' : 'delivered');
          return;
        }
        if (!this.dirty && !this.closing) await new Promise<void>((resolve) => (this.wake = resolve));
      } else {
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  private async load(): Promise<void> {
    if (!this.record) return;
    for (let i = 0; ; i++) {
      try {
        const r = await this.record.load();
        if (!r) return;
        if (r.parked) {
          // The decision resumed the turn: its continuation is a new reply under the request.
          this.phase = r.phase + 1;
          const last = r.ids.at(-1);
          if (last && this.platform.resumedAfterPark)
            await this.platform.resumedAfterPark(last).catch((err: unknown) => this.opts.log.debug({ err }, 'could not tidy the request message'));
        } else {
          this.phase = r.phase;
          this.msgs = r.ids.map((id) => ({ id, content: null, extra: '?', editedAt: 0 }));
        }
        return;
      } catch (err) {
        if (i >= 4) {
          this.opts.log.warn({ err }, 'could not read what an earlier attempt posted; posting afresh');
          return;
        }
        await new Promise((r) => setTimeout(r, 250 * 2 ** i));
      }
    }
  }

  /** The messages the draft needs now. */
  parts(final: boolean): Part[] {
    const d = this.draft;
    const split = this.opts.split ?? splitFenced;
    const render = this.opts.render ?? ((chunk, status) => [chunk, status].filter(Boolean).join('\n\n'));
    const placeholder = this.opts.placeholder ?? '…';
    const chunks = d.text.trim() ? split(d.text, this.opts.maxChars) : [];
    const status = final ? (d.statusAtEnd ?? null) : (d.status ?? null);
    const hasExtra = d.extra !== undefined && !(Array.isArray(d.extra) && d.extra.length === 0);
    if (!chunks.length) {
      if (final) {
        if (hasExtra || this.msgs.length || status) chunks.push(d.empty ?? '');
      } else if (this.msgs.length || status) chunks.push('');
    }
    // While the turn runs, messages a reset emptied keep a placeholder; the final pass deletes them.
    if (!final) while (chunks.length < this.msgs.length) chunks.push('');
    return chunks.map((c, i) => {
      const last = i === chunks.length - 1;
      const content = render(c, last ? status : null) || placeholder;
      return { index: i, content, extra: last && d.extra !== undefined ? d.extra : [] };
    });
  }

  /** Returns -1 when the platform is in line, else how long until the next edit is allowed. */
  private async sync(final: boolean): Promise<number> {
    const want = this.parts(final);
    for (const p of want) {
      let m = this.msgs[p.index];
      if (!m) {
        const r = await this.platform.post(p, this.phase, '');
        m = { id: r.id, content: r.content ?? p.content, extra: JSON.stringify(p.extra), editedAt: (r.content ?? p.content) === p.content ? Date.now() : 0 };
        this.msgs.push(m);
        await this.record?.save(this.phase, this.ids, 'streaming');
      }
      if (m.content === p.content && m.extra === JSON.stringify(p.extra)) continue;
      const due = m.editedAt + this.opts.editIntervalMs - Date.now();
      if (due > 0) return due;
      const r = await this.platform.edit(m.id, p);
      if (r === 'gone') {
        // Deleted by someone: post its part again.
        const again = await this.platform.post(p, this.phase, `:again:${m.id}`);
        this.msgs[p.index] = { id: again.id, content: p.content, extra: JSON.stringify(p.extra), editedAt: Date.now() };
        await this.record?.save(this.phase, this.ids, 'streaming');
      } else {
        this.msgs[p.index] = { id: m.id, content: p.content, extra: JSON.stringify(p.extra), editedAt: Date.now() };
      }
    }
    if (final && this.msgs.length > want.length) {
      for (const extra of this.msgs.splice(want.length)) await this.platform.remove(extra.id);
      await this.record?.save(this.phase, this.ids, 'streaming');
    }
    return -1;
  }
}

/**
 * The platform behind the fence: each call asks it first and throws LeaseLostError instead of
 * calling once it says no. Checked at the call, not when the edit was queued: a worker frozen
 * with an edit waiting for its throttle must not send it when it wakes.
 */
export function fencedPlatform(platform: EditPlatform, fence: () => boolean): EditPlatform {
  const gate = (what: string) => {
    if (!fence()) throw new LeaseLostError(`not calling ${what}: this attempt's lease is lost`);
  };
  return {
    post: async (part, phase, salt) => {
      gate('post');
      return platform.post(part, phase, salt);
    },
    edit: async (id, part) => {
      gate('edit');
      return platform.edit(id, part);
    },
    remove: async (id) => {
      gate('remove');
      return platform.remove(id);
    },
    permanent: (err) => platform.permanent(err),
    ...(platform.code ? { code: (err: unknown) => platform.code!(err) } : {}),
    ...(platform.resumedAfterPark
      ? {
          resumedAfterPark: async (id: string) => {
            gate('resumedAfterPark');
            return platform.resumedAfterPark!(id);
          },
        }
      : {}),
  };
}
