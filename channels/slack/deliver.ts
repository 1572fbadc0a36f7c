import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { ApprovalInfo, TurnEvent } from '../../kernel/turn-events.js';
import {
  type ChannelDeliverer,
  ChannelDeliveryError,
  callStatus,
  type DeliverContext,
  ReplyBuffer,
  type ToolCall,
  type TurnDelivery,
  type TurnTarget,
} from '../../src/channel/index.js';
import { approvalBlocks } from './approvals.js';
import { isTransient, slackError, webClient } from './client.js';
import type { SlackConfig } from './config.js';
import { SlackEditTurn } from './edit-turn.js';
import { markdownToMrkdwn } from './format.js';
import { slackReplyText, statusLine } from './reply-text.js';
import { splitMessage } from './split.js';
import { type SlackWhere, whereFor } from './target.js';

/** Slack errors that mean native streaming is not available to this app at all. */
const NATIVE_UNAVAILABLE = new Set([
  'unknown_method',
  'method_deprecated',
  'not_allowed_token_type',
  'missing_scope',
  'feature_not_enabled',
  'invalid_auth',
  'not_authed',
  'team_not_allowed',
]);

/**
 * The worker side: one delivery per turn attempt. In a thread where Slack
 * offers native streaming, a SlackTurn streams (chat.startStream /
 * appendStream / stopStream, with task updates), falling back to editing if a
 * stream call fails; everywhere else a SlackEditTurn posts and edits through
 * the SDK's engine (chat.postMessage + chat.update at most once per
 * updateIntervalMs per message).
 */
export class SlackDeliverer implements ChannelDeliverer {
  client?: WebClient;
  /** Slack said the streaming methods are not available: every turn edits instead. */
  nativeOff = false;
  private readonly turns = new Set<SlackTurn>();

  constructor(readonly cfg: SlackConfig) {}

  async start(ctx: DeliverContext): Promise<void> {
    this.client ??= webClient(this.cfg, ctx.log);
  }

  /** approvals.operatorChannel: the request, with its buttons, in an operators' Slack channel. */
  async notifyApproval(target: string, approval: ApprovalInfo, _text: string, ctx: DeliverContext): Promise<void> {
    this.client ??= webClient(this.cfg, ctx.log);
    await this.client.chat.postMessage({ channel: target, ...approvalBlocks(approval) });
  }

  open(target: TurnTarget, ctx: DeliverContext): TurnDelivery {
    this.client ??= webClient(this.cfg, ctx.log);
    const log = ctx.log.child({ channel: 'slack', turn: target.turnId, attempt: target.attempt });
    const where = whereFor(target);
    if (!where) {
      log.error({ conversation: target.conversation.key }, 'no Slack reply target for this turn; nothing will be delivered');
      return { event: () => {}, close: async () => {} };
    }
    // Native streaming is an override of the post-and-edit engine, for threads where Slack offers it.
    const native = this.cfg.streaming === 'native' && !this.nativeOff && !!where.thread_ts && (where.dm || (!!where.team && !!where.user));
    if (!native) return new SlackEditTurn(this.client, this.cfg, target, ctx, where, log);
    const t = new SlackTurn(this, this.client, target, ctx, where, log, () => this.turns.delete(t));
    this.turns.add(t);
    return t;
  }

  async close(): Promise<void> {
    for (const t of this.turns) t.abandon();
    this.turns.clear();
  }
}

interface Seg {
  /** Position in the turn's delivery rows (msg:<channel>:<index>). */
  index: number;
  ts?: string;
  mode: 'native' | 'edit';
  /** A native stream started and not stopped. */
  open: boolean;
  /** Native: the Markdown appended so far. */
  sent: string;
  /** Edit: the text last posted/updated (null: unknown, from an earlier attempt). */
  shown: string | null;
  lastUpdate: number;
  /** From an earlier attempt of this turn, possibly still streaming. */
  wasStreaming?: boolean;
  deleted?: boolean;
  /** What this message holds (recorded at the end). */
  body: string;
}

type TaskChunk = { type: 'task_update'; id: string; title: string; status: 'pending' | 'in_progress' | 'complete' | 'error' };

/** A tool call as a native-streaming task: a parked call is pending, waiting for approval, never "Failed". */
function taskOf(c: ToolCall): TaskChunk {
  switch (c.state) {
    case 'running':
      return { type: 'task_update', id: c.id, title: `Running ${c.name}`, status: 'in_progress' };
    case 'done':
      return { type: 'task_update', id: c.id, title: `Ran ${c.name}`, status: 'complete' };
    case 'failed':
      return { type: 'task_update', id: c.id, title: `Failed ${c.name}`, status: 'error' };
    case 'waiting':
      return { type: 'task_update', id: c.id, title: `${c.name} ${callStatus(c)}`, status: 'pending' };
  }
}

class SlackTurn implements TurnDelivery {
  /** What the turn said (a reset withdraws the current model message: tools separate messages). */
  private readonly reply = new ReplyBuffer();
  private tasks: TaskChunk[] = [];
  private tasksOff = false;
  private nativeOffHere = false;
  private segs: Seg[] = [];
  private reusable: Seg[] = [];
  private nextIndex = 0;
  private loaded: boolean;
  private postedApprovals = new Set<string>();
  private chain: Promise<void> = Promise.resolve();
  private timer?: NodeJS.Timeout;
  private syncing = false;
  private dirty = false;
  private lastSyncAt = 0;
  private closed = false;
  private abandoned = false;
  /** A delivery failure worth retrying the turn for (Slack unreachable). */
  private failure: unknown;

  constructor(
    private readonly owner: SlackDeliverer,
    private readonly client: WebClient,
    private readonly target: TurnTarget,
    private readonly ctx: DeliverContext,
    private readonly where: SlackWhere,
    private readonly log: Logger,
    private readonly done: () => void,
  ) {
    // A first attempt has nothing posted yet; a retried or resumed one looks at what it left.
    this.loaded = target.attempt <= 1;
  }

  event(e: TurnEvent): void {
    if (this.closed) return;
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
        // The request is its own message, with buttons (the turn says it as an event only).
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

  private get full(): string {
    return slackReplyText(this.reply);
  }

  private statusLine(final: boolean): string | null {
    return statusLine(this.reply, final);
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
    if (this.failure && !this.abandoned) {
      const code = slackError(this.failure);
      throw new ChannelDeliveryError(`slack did not take the reply: ${code}`, {
        retryable: isTransient(this.failure),
        platformCode: code,
        cause: this.failure,
      });
    }
  }

  abandon(): void {
    this.abandoned = true;
    this.closed = true;
    clearTimeout(this.timer);
  }

  // ---- scheduling -------------------------------------------------------

  private enqueue(op: () => Promise<void>): void {
    this.chain = this.chain.then(op).catch((err: unknown) => this.log.error({ err }, 'slack delivery failed'));
  }

  private schedule(): void {
    if (this.closed || this.timer || this.syncing) return;
    const cfg = this.owner.cfg;
    const streaming = this.segs.some((s) => s.open) || (!this.segs.length && this.nativeOk());
    const interval = streaming ? cfg.streamIntervalMs : cfg.updateIntervalMs;
    const wait = Math.max(0, this.lastSyncAt + interval - Date.now());
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

  private nativeOk(): boolean {
    const w = this.where;
    return this.owner.cfg.streaming === 'native' && !this.owner.nativeOff && !this.nativeOffHere && !!w.thread_ts && (w.dm || (!!w.team && !!w.user));
  }

  // ---- syncing Slack with the state ---------------------------------------

  private async sync(final: boolean): Promise<void> {
    if (this.abandoned) return;
    if (!this.loaded) await this.load();
    this.lastSyncAt = Date.now();
    const text = this.full;
    let chunks = text.trim() ? splitMessage(text, this.owner.cfg.maxMessageChars) : [];
    // A withdrawn answer keeps its message (it is edited, not deleted and posted again).
    if (!chunks.length && (this.segs.length || this.statusLine(final))) chunks = [''];
    for (let i = 0; i < chunks.length; i++) {
      await this.syncSeg(i, chunks[i]!, i === chunks.length - 1, final);
    }
    // Text withdrawn by a reset: the messages it filled go.
    for (const seg of this.segs.splice(chunks.length)) await this.remove(seg);
    if (final) this.tasks = [];
  }

  private async syncSeg(i: number, want: string, isLast: boolean, final: boolean): Promise<void> {
    let seg = this.segs[i];
    if (!seg) {
      seg = this.reusable.shift() ?? { index: this.nextIndex++, mode: 'edit', open: false, sent: '', shown: null, lastUpdate: 0, body: '' };
      this.segs[i] = seg;
    }
    seg.body = want;
    const status = isLast ? this.statusLine(final) : null;
    if (!seg.ts) {
      if (!want && !status && final) return;
      if (this.nativeOk() && (await this.startStream(seg, want, isLast))) {
        if (!isLast || final) await this.stopStream(seg);
        return;
      }
      await this.post(seg, want, status);
      return;
    }
    if (seg.mode === 'native' && seg.open) {
      if (want.startsWith(seg.sent)) {
        const delta = want.slice(seg.sent.length);
        const tasks = isLast ? this.takeTasks() : [];
        if (!isLast || final) {
          await this.stopStream(seg, delta, tasks);
          return;
        }
        if (delta || tasks.length) await this.append(seg, delta, tasks);
        return;
      }
      // Not an append (a reset withdrew text): finish the stream, then edit the message.
      await this.stopStream(seg);
      seg.mode = 'edit';
      seg.shown = null;
    }
    if (seg.mode === 'native') {
      // A finished stream: touched again only if its text changed.
      if (want === seg.sent) return;
      seg.mode = 'edit';
      seg.shown = null;
    }
    await this.update(seg, want, status, final);
  }

  private takeTasks(): TaskChunk[] {
    const t = this.tasks;
    this.tasks = [];
    return this.tasksOff ? [] : t;
  }

  private render(want: string, status: string | null): string {
    const body = want.trim() ? markdownToMrkdwn(want) : '';
    const text = [body, status ? `_${status}_` : ''].filter(Boolean).join('\n\n');
    return text || '…';
  }

  private async startStream(seg: Seg, want: string, isLast: boolean): Promise<boolean> {
    const w = this.where;
    const tasks = isLast ? this.takeTasks() : [];
    if (!want && !tasks.length) return false; // nothing to start a stream with: the status line goes by message
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
      Object.assign(seg, { ts: r.ts, mode: 'native', open: true, sent: want, lastUpdate: Date.now() });
      await this.record(seg, 'streaming');
      return true;
    } catch (err) {
      const code = slackError(err);
      if (NATIVE_UNAVAILABLE.has(code)) {
        if (!this.owner.nativeOff) this.log.warn({ error: code }, 'native streaming is not available to this Slack app; posting and editing messages instead');
        this.owner.nativeOff = true;
      } else {
        this.log.warn({ error: code }, 'chat.startStream failed; posting and editing this reply instead');
        this.nativeOffHere = true;
      }
      return false;
    }
  }

  private async append(seg: Seg, delta: string, tasks: TaskChunk[]): Promise<void> {
    try {
      const args: Record<string, unknown> = { channel: this.where.channel, ts: seg.ts };
      if (tasks.length) args.chunks = [...(delta ? [{ type: 'markdown_text', text: delta }] : []), ...tasks];
      else args.markdown_text = delta;
      await this.client.chat.appendStream(args as never);
      seg.sent += delta;
      seg.lastUpdate = Date.now();
    } catch (err) {
      if (tasks.length) {
        // The task chunks may be what Slack refused: go on without them.
        this.tasksOff = true;
        if (delta) return this.append(seg, delta, []);
        return;
      }
      this.log.warn({ error: slackError(err) }, 'chat.appendStream failed; editing the message instead');
      await this.stopStream(seg);
      seg.mode = 'edit';
      seg.shown = null;
      await this.update(seg, seg.sent + delta, null, false);
    }
  }

  private async stopStream(seg: Seg, delta = '', tasks: TaskChunk[] = []): Promise<void> {
    if (!seg.ts) return;
    try {
      const args: Record<string, unknown> = { channel: this.where.channel, ts: seg.ts };
      if (delta) args.markdown_text = delta;
      if (tasks.length && !this.tasksOff) args.chunks = tasks;
      await this.client.chat.stopStream(args as never);
      seg.sent += delta;
    } catch (err) {
      this.log.warn({ error: slackError(err) }, 'chat.stopStream failed');
      if (delta) {
        seg.open = false;
        seg.mode = 'edit';
        seg.shown = null;
        await this.update(seg, seg.sent + delta, null, true);
        return;
      }
    }
    seg.open = false;
  }

  private async post(seg: Seg, want: string, status: string | null): Promise<void> {
    const text = this.render(want, status);
    try {
      const r = await this.client.chat.postMessage({
        channel: this.where.channel,
        text,
        mrkdwn: true,
        ...(this.where.thread_ts ? { thread_ts: this.where.thread_ts } : {}),
      });
      Object.assign(seg, { ts: r.ts, mode: 'edit', open: false, shown: text, lastUpdate: Date.now() });
      this.failure = undefined;
      await this.record(seg, 'open');
    } catch (err) {
      this.fail(err, 'chat.postMessage');
    }
  }

  private async update(seg: Seg, want: string, status: string | null, final: boolean): Promise<void> {
    const text = this.render(want, status);
    if (text === seg.shown) return;
    if (seg.wasStreaming) {
      // Left streaming by an attempt that died: finish it before editing it.
      seg.wasStreaming = false;
      await this.client.chat
        .stopStream({ channel: this.where.channel, ts: seg.ts! } as never)
        .catch((err: unknown) => this.log.debug({ err }, 'could not stop the stream an earlier attempt left open; editing it anyway'));
    }
    // Slack accepts about one edit per second per message; the final edit waits its turn.
    const wait = seg.lastUpdate + this.owner.cfg.updateIntervalMs - Date.now();
    if (wait > 0) {
      if (!final) {
        this.dirty = true;
        return;
      }
      await sleep(wait);
    }
    try {
      await this.client.chat.update({ channel: this.where.channel, ts: seg.ts!, text });
      seg.shown = text;
      seg.lastUpdate = Date.now();
      this.failure = undefined;
    } catch (err) {
      if (slackError(err) === 'message_not_found') {
        // Deleted meanwhile: the next sync posts it again.
        seg.ts = undefined;
        seg.shown = null;
        if (final) await this.post(seg, want, status);
        return;
      }
      this.fail(err, 'chat.update');
    }
  }

  private async remove(seg: Seg): Promise<void> {
    if (!seg.ts) return;
    if (seg.open) await this.stopStream(seg);
    try {
      await this.client.chat.delete({ channel: this.where.channel, ts: seg.ts });
    } catch (err) {
      this.log.warn({ error: slackError(err) }, 'chat.delete failed');
    }
    seg.deleted = true;
    await this.record(seg, 'deleted');
  }

  private async postApproval(a: ApprovalInfo): Promise<void> {
    if (this.postedApprovals.has(a.code)) return; // asked already by an earlier attempt of this turn
    const { text, blocks } = approvalBlocks(a);
    try {
      const r = await this.client.chat.postMessage({
        channel: this.where.channel,
        text,
        blocks: blocks as never,
        ...(this.where.thread_ts ? { thread_ts: this.where.thread_ts } : {}),
      });
      this.postedApprovals.add(a.code);
      await this.ctx.deliveries
        .record(this.target.turnId, 'slack', `approval:${a.code}`, { platformMessageId: r.ts ?? null, state: 'posted', body: text })
        .catch((err: unknown) => this.log.warn({ err }, 'could not record the approval message'));
    } catch (err) {
      this.fail(err, 'chat.postMessage (approval)');
    }
  }

  /** The end of the attempt: record what each message holds; messages of an earlier attempt not reused go. */
  private async finish(): Promise<void> {
    if (this.abandoned) return;
    for (const seg of this.reusable.splice(0)) await this.remove(seg);
    // A failed attempt is not parked: its replay (a delivery job) edits these messages again instead of answering below them.
    for (const seg of this.segs) if (seg.ts && !seg.deleted) await this.record(seg, this.reply.parked && !this.failure ? 'parked' : 'done');
    // Slack refused the reply (close() reports it, not retryable: a dead letter).
    if (this.failure && !isTransient(this.failure)) this.log.error({ error: slackError(this.failure) }, 'slack refused the reply');
  }

  private fail(err: unknown, what: string): void {
    this.log.warn({ error: slackError(err) }, `${what} failed`);
    this.failure = err;
  }

  private async record(seg: Seg, state: string): Promise<void> {
    try {
      await this.ctx.deliveries.record(this.target.turnId, 'slack', `msg:${this.where.channel}:${seg.index}`, {
        platformMessageId: seg.ts ?? null,
        state,
        body: seg.body,
      });
    } catch (err) {
      this.log.warn({ err }, 'could not record the Slack message of this turn');
    }
  }

  /** A retried or resumed attempt: what earlier attempts posted. */
  private async load(): Promise<void> {
    this.loaded = true;
    try {
      const rows = (await this.ctx.deliveries.forTurn(this.target.turnId)).filter((r) => r.channel === 'slack');
      const msgs: Array<{ index: number; state: string; ts: string | null; body: string | null }> = [];
      for (const r of rows) {
        if (r.target.startsWith('approval:')) this.postedApprovals.add(r.target.slice('approval:'.length));
        const m = /^msg:(.+):(\d+)$/.exec(r.target);
        if (m) msgs.push({ index: Number(m[2]), state: r.state, ts: r.platform_message_id, body: r.body });
      }
      msgs.sort((a, b) => a.index - b.index);
      this.nextIndex = msgs.length ? msgs[msgs.length - 1]!.index + 1 : 0;
      const lastParked = msgs.reduce((acc, m) => (m.state === 'parked' ? Math.max(acc, m.index) : acc), -1);
      this.reusable = msgs
        .filter((m) => m.index > lastParked && m.state !== 'deleted' && m.ts)
        .map((m) => ({
          index: m.index,
          ts: m.ts!,
          mode: 'edit' as const,
          open: false,
          sent: '',
          shown: null,
          lastUpdate: 0,
          wasStreaming: m.state === 'streaming',
          body: m.body ?? '',
        }));
    } catch (err) {
      this.log.warn({ err }, 'could not read what earlier attempts of this turn posted');
    }
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
