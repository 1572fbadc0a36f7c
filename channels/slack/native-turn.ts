import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { ApprovalInfo, TurnEvent } from '../../kernel/turn-events.js';
import { ChannelDeliveryError, type DeliverContext, ReplyBuffer, type TurnDelivery, type TurnTarget } from '../../src/channel/index.js';
import { type AppendBudgets, type TokenBucket, workspaceOf } from './append-budget.js';
import { SlackApprovalPoster } from './approval-post.js';
import { isTransient, slackError } from './client.js';
import type { SlackConfig } from './config.js';
import { type EditSeed, SlackEditTurn } from './edit-turn.js';
import { slackReplyText, statusLine } from './reply-text.js';
import { splitMessage } from './split.js';
import { NATIVE_UNAVAILABLE, type TaskChunk, taskOf } from './stream-tasks.js';
import type { SlackWhere } from './target.js';

/** Whether this Slack app may stream natively at all, shared by its turns (the deliverer). */
export interface NativeSwitch {
  nativeOff: boolean;
  /** chat.appendStream budgets per workspace, shared by every stream of the process. */
  appendBudgets: AppendBudgets;
}

/** One message of the reply, streamed natively (row msg:<channel>:<index>). */
interface Stream {
  index: number;
  ts: string;
  /** The Markdown appended so far. */
  sent: string;
  /** Started and not stopped. */
  open: boolean;
}

/**
 * A turn streamed natively in a thread (chat.startStream / appendStream / stopStream, tool calls
 * as task updates): an override of the post-and-edit engine for as long as the reply only grows.
 * Anything streaming cannot show (a reset withdrawing text, a stream call Slack refuses, a
 * message to change after its stream stopped, messages an earlier attempt left) hands the turn
 * to a SlackEditTurn, the shared engine, with the messages streamed so far and every event seen.
 */
export class SlackNativeTurn implements TurnDelivery {
  private readonly reply = new ReplyBuffer();
  /** Every event so far, for the edit turn this one may hand over to. */
  private readonly seen: TurnEvent[] = [];
  private readonly approvals: SlackApprovalPoster;
  private tasks: TaskChunk[] = [];
  private tasksOff = false;
  private streams: Stream[] = [];
  private nextIndex = 0;
  private loaded: boolean;
  private fallback?: SlackEditTurn;
  private chain: Promise<void> = Promise.resolve();
  private timer?: NodeJS.Timeout;
  private syncing = false;
  private dirty = false;
  private lastSyncAt = 0;
  /** The workspace's append budget was spent: no append before this. */
  private pacedUntil = 0;
  private readonly budget: TokenBucket;
  private closed = false;
  private abandoned = false;
  /** An approval request Slack did not take, worth retrying the turn for (Slack unreachable). */
  private failure: unknown;

  constructor(
    private readonly native: NativeSwitch,
    private readonly client: WebClient,
    private readonly cfg: SlackConfig,
    private readonly target: TurnTarget,
    private readonly ctx: DeliverContext,
    private readonly where: SlackWhere,
    private readonly log: Logger,
    private readonly done: () => void,
  ) {
    this.approvals = new SlackApprovalPoster(client, where, ctx, target.turnId, log);
    this.budget = native.appendBudgets.for(workspaceOf(target.conversation.key));
    // A first attempt has nothing posted yet; a retried or resumed one looks at what it left.
    this.loaded = target.attempt <= 1;
  }

  event(e: TurnEvent): void {
    if (this.closed) return;
    if (this.fallback) {
      this.fallback.event(e);
      return;
    }
    this.seen.push(e);
    try {
      this.apply(e);
    } catch (err) {
      this.log.error({ err }, 'slack delivery: event failed');
    }
  }

  private apply(e: TurnEvent): void {
    let changed = false;
    for (const c of this.reply.push(e)) {
      if (c.kind === 'tool' && !this.tasksOff) this.tasks.push(taskOf(c.call));
      if (c.kind === 'approval') {
        // The request is its own message, with buttons, under the reply so far.
        const a = c.approval;
        this.enqueue(async () => {
          await this.sync(true);
          await this.postApproval(a);
        });
        continue;
      }
      if (c.kind !== 'done') changed = true;
    }
    if (!changed) return;
    this.dirty = true;
    this.schedule();
  }

  async close(): Promise<void> {
    if (this.closed) return this.chain;
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.enqueue(async () => {
      await this.sync(true);
      await this.finish();
    });
    await this.chain;
    this.done();
    await this.fallback?.close();
    if (this.failure && !this.abandoned) {
      // Retryable or not, the delivery sink hands it to a delivery job (a refusal is dead-lettered at once).
      const code = slackError(this.failure);
      throw new ChannelDeliveryError(`slack did not take the reply: ${code}`, {
        retryable: isTransient(this.failure),
        platformCode: code,
        cause: this.failure,
      });
    }
  }

  /**
   * Asked right before each stream call: once the attempt's lease is lost (ctx.fence), the turn is
   * abandoned here and makes no more calls; the attempt that took over owns these messages.
   */
  private live(): boolean {
    if (this.abandoned) return false;
    if (this.ctx.fence && !this.ctx.fence()) {
      this.log.warn('the lease is lost: this delivery makes no more platform calls');
      this.abandon();
      this.done();
      return false;
    }
    return true;
  }

  abandon(): void {
    this.abandoned = true;
    this.closed = true;
    clearTimeout(this.timer);
  }

  private enqueue(op: () => Promise<void>): void {
    this.chain = this.chain.then(op).catch((err: unknown) => this.log.error({ err }, 'slack delivery failed'));
  }

  private schedule(): void {
    if (this.closed || this.timer || this.syncing || this.fallback) return;
    const streaming = this.streams.some((s) => s.open) || !this.streams.length;
    const interval = streaming ? this.cfg.streamIntervalMs : this.cfg.updateIntervalMs;
    const wait = Math.max(0, this.lastSyncAt + interval - Date.now(), this.pacedUntil - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.closed) return;
      this.syncing = true;
      this.enqueue(async () => {
        try {
          this.dirty = false;
          await this.sync(false);
        } finally {
          this.syncing = false;
          if (this.dirty) this.schedule();
        }
      });
    }, wait);
  }

  // ---- the streams --------------------------------------------------------

  private async sync(final: boolean): Promise<void> {
    if (!this.live() || this.fallback) return;
    if (!this.loaded) await this.load();
    if (this.fallback) return;
    this.lastSyncAt = Date.now();
    const text = slackReplyText(this.reply);
    let chunks = text.trim() ? splitMessage(text, this.cfg.maxMessageChars) : [];
    if (!chunks.length && (this.streams.length || statusLine(this.reply, final))) chunks = [''];
    // Text withdrawn by a reset: messages to empty or delete are the engine's.
    if (chunks.length < this.streams.length) return this.handOver();
    for (let i = 0; i < chunks.length; i++) {
      if (!(await this.syncStream(i, chunks[i]!, i === chunks.length - 1, final))) return this.handOver();
    }
    if (final) this.tasks = [];
  }

  /** False when streaming cannot show this part: the edit engine takes the turn over. */
  private async syncStream(i: number, want: string, isLast: boolean, final: boolean): Promise<boolean> {
    const s = this.streams[i];
    if (!s) {
      if (!want && !statusLine(this.reply, final) && final) return true;
      const tasks = isLast ? this.takeTasks() : [];
      // Nothing to start a stream with but a status line: that is a message to post and edit.
      if (!want && !tasks.length) return false;
      const started = await this.start(want, tasks);
      if (!started) return false;
      return !isLast || final ? this.stop(started) : true;
    }
    if (s.open) {
      if (!want.startsWith(s.sent)) {
        // Not an append (a reset withdrew text): finish the stream; the engine edits the message.
        await this.stop(s);
        return false;
      }
      const delta = want.slice(s.sent.length);
      if (!isLast || final) return this.stop(s, delta, isLast ? this.takeTasks() : []);
      if (!delta && !(this.tasks.length && !this.tasksOff)) return true;
      if (!this.budget.take()) {
        // The workspace's budget is spent: this text (and its task updates) goes with a later append.
        this.pacedUntil = Date.now() + this.budget.waitMs();
        this.dirty = true;
        return true;
      }
      return this.append(s, delta, this.takeTasks());
    }
    // A finished stream is touched again only if its text changed, by editing it.
    return want === s.sent;
  }

  private takeTasks(): TaskChunk[] {
    const t = this.tasks;
    this.tasks = [];
    return this.tasksOff ? [] : t;
  }

  private async start(want: string, tasks: TaskChunk[]): Promise<Stream | undefined> {
    if (!this.live()) return undefined;
    if (this.native.nativeOff) return undefined; // another turn learned that this app cannot stream
    const w = this.where;
    try {
      const args: Record<string, unknown> = {
        channel: w.channel,
        thread_ts: w.thread_ts,
        ...(w.team ? { recipient_team_id: w.team } : {}),
        ...(w.user ? { recipient_user_id: w.user } : {}),
        ...(want ? { markdown_text: want } : {}),
        ...(tasks.length ? { chunks: tasks } : {}),
      };
      const r = await this.client.chat.startStream(args as never);
      if (!r.ts) throw new Error('chat.startStream returned no ts');
      const s: Stream = { index: this.nextIndex++, ts: r.ts, sent: want, open: true };
      this.streams.push(s);
      await this.record(s, 'streaming', want);
      return s;
    } catch (err) {
      const code = slackError(err);
      if (NATIVE_UNAVAILABLE.has(code)) {
        if (!this.native.nativeOff) this.log.warn({ error: code }, 'native streaming is not available to this Slack app; posting and editing messages instead');
        this.native.nativeOff = true;
      } else {
        this.log.warn({ error: code }, 'chat.startStream failed; posting and editing this reply instead');
      }
      return undefined;
    }
  }

  private async append(s: Stream, delta: string, tasks: TaskChunk[]): Promise<boolean> {
    if (!this.live()) return true; // abandoned: nothing more is called
    try {
      // markdown_text is required by the method, also when only task updates come (then empty).
      const args: Record<string, unknown> = { channel: this.where.channel, ts: s.ts, markdown_text: delta, ...(tasks.length ? { chunks: tasks } : {}) };
      await this.client.chat.appendStream(args as never);
      s.sent += delta;
      return true;
    } catch (err) {
      if (tasks.length) {
        // The task chunks may be what Slack refused: go on without them.
        this.tasksOff = true;
        return delta ? this.append(s, delta, []) : true;
      }
      this.log.warn({ error: slackError(err) }, 'chat.appendStream failed; editing the message instead');
      await this.stop(s);
      return false;
    }
  }

  /** False when the stream could not take its last delta (the engine edits it in). */
  private async stop(s: Stream, delta = '', tasks: TaskChunk[] = []): Promise<boolean> {
    if (!this.live()) return true;
    try {
      const args: Record<string, unknown> = { channel: this.where.channel, ts: s.ts };
      if (delta) args.markdown_text = delta;
      if (tasks.length && !this.tasksOff) args.chunks = tasks;
      await this.client.chat.stopStream(args as never);
      s.sent += delta;
      s.open = false;
      return true;
    } catch (err) {
      this.log.warn({ error: slackError(err) }, 'chat.stopStream failed');
      if (delta) return false; // still open as far as we know: the engine stops it before editing
      s.open = false;
      return true;
    }
  }

  /** The edit engine takes the turn from here, with the messages streamed so far. */
  private handOver(seed: EditSeed = this.seed()): void {
    if (this.abandoned) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.fallback = new SlackEditTurn(this.client, this.cfg, this.target, this.ctx, this.where, this.log, { seed, approvals: this.approvals });
    for (const e of this.seen.splice(0)) this.fallback.event(e);
  }

  private seed(): EditSeed {
    return {
      base: this.streams[0]?.index ?? this.nextIndex,
      ids: this.streams.map((s) => s.ts),
      streaming: this.streams.filter((s) => s.open).map((s) => s.ts),
    };
  }

  private async postApproval(a: ApprovalInfo): Promise<void> {
    if (this.fallback || !this.live()) return; // the edit turn asks it, after the reply
    try {
      await this.approvals.post(a);
    } catch (err) {
      this.log.warn({ error: slackError(err) }, 'chat.postMessage (approval) failed');
      this.failure = err;
    }
  }

  /** The end of the attempt: record what each message holds. */
  private async finish(): Promise<void> {
    if (this.abandoned || this.fallback) return;
    // A failed attempt is not parked: its replay (a delivery job) edits these messages again instead of answering below them.
    for (const s of this.streams) await this.record(s, this.reply.parked && !this.failure ? 'parked' : 'done', s.sent);
    // Slack refused the reply (close() reports it, not retryable: a dead letter).
    if (this.failure && !isTransient(this.failure)) this.log.error({ error: slackError(this.failure) }, 'slack refused the reply');
  }

  private async record(s: Stream, state: string, body: string): Promise<void> {
    try {
      await this.ctx.deliveries.record(this.target.turnId, 'slack', `msg:${this.where.channel}:${s.index}`, { platformMessageId: s.ts, state, body });
    } catch (err) {
      this.log.warn({ err }, 'could not record the Slack message of this turn');
    }
  }

  /** A retried or resumed attempt: what earlier attempts posted. Messages of this phase are the engine's to edit. */
  private async load(): Promise<void> {
    this.loaded = true;
    try {
      const rows = (await this.ctx.deliveries.forTurn(this.target.turnId)).filter((r) => r.channel === 'slack');
      const msgs: Array<{ index: number; state: string; ts: string | null }> = [];
      for (const r of rows) {
        if (r.target.startsWith('approval:')) this.approvals.posted.add(r.target.slice('approval:'.length));
        const m = /^msg:(.+):(\d+)$/.exec(r.target);
        if (m && m[1] === this.where.channel) msgs.push({ index: Number(m[2]), state: r.state, ts: r.platformMessageId });
      }
      msgs.sort((a, b) => a.index - b.index);
      this.nextIndex = msgs.length ? msgs[msgs.length - 1]!.index + 1 : 0;
      const lastParked = msgs.reduce((acc, m) => (m.state === 'parked' ? Math.max(acc, m.index) : acc), -1);
      const mine = msgs.filter((m) => m.index > lastParked && m.state !== 'deleted' && m.ts);
      if (mine.length)
        this.handOver({
          base: mine[0]!.index,
          ids: mine.map((m) => m.ts!),
          streaming: mine.filter((m) => m.state === 'streaming').map((m) => m.ts!),
        });
    } catch (err) {
      this.log.warn({ err }, 'could not read what earlier attempts of this turn posted');
    }
  }
}
