import { createHash } from 'node:crypto';
import { DiscordAPIError, Routes, type APIMessage, type REST } from 'discord.js';
import type { Logger } from 'pino';
import type { ChannelDeliverer, DeliverContext, TurnDelivery, TurnTarget } from '../../src/channel/index.js';
import type { ApprovalInfo, TurnEvent } from '../../kernel/turn-events.js';
import { approvalRows } from './approvals.js';
import { createRest } from './client.js';
import type { DiscordSettings } from './config.js';
import { toDiscordMarkdown } from './format.js';
import type { DiscordReplyTo } from './inbound.js';
import { splitMessage } from './split.js';
import { ignoreError } from '../../kernel/errors.js';

const CHANNEL = 'discord';
const TYPING_EVERY_MS = 8_000;
/** A turn whose delivery is never closed (it failed) stops typing after this long without events. */
const TYPING_IDLE_MS = 120_000;
const PLACEHOLDER = '…';

/** The worker side: one REST client (with its rate-limit queues) for every turn of the process. */
export class DiscordDeliverer implements ChannelDeliverer {
  private rest?: REST;

  constructor(private readonly cfg: DiscordSettings) {}

  async start(): Promise<void> {
    this.rest ??= createRest(this.cfg);
  }

  /** approvals.operatorChannel: the request, with its buttons, in an operators' Discord channel. */
  async notifyApproval(target: string, approval: ApprovalInfo, text: string): Promise<void> {
    this.rest ??= createRest(this.cfg);
    const rule = approval.alwaysPermitted === true && approval.tier !== 'dangerous';
    await this.rest.post(Routes.channelMessages(target), {
      body: { content: text.slice(0, 2000), components: approvalRows([{ code: approval.code, tool: approval.tool, alwaysPermitted: rule }]) },
    });
  }

  open(target: TurnTarget, ctx: DeliverContext): TurnDelivery {
    this.rest ??= createRest(this.cfg);
    return new DiscordTurnDelivery(target, ctx, this.rest, this.cfg, ctx.log.child({ channel: CHANNEL, turn: target.turnId }));
  }

  async close(): Promise<void> {
    this.rest?.clearHashSweeper();
    this.rest?.clearHandlerSweeper();
  }
}

interface Posted {
  id: string;
  content: string;
  /** JSON of the components the message shows ('?' when unknown: a message found from an earlier attempt). */
  components: string;
  editedAt: number;
}

interface Desired {
  content: string;
  components: unknown[];
}

/** What the deliveries row keeps: the phase (a parked turn's continuation is a new phase) and its messages. */
interface RecordBody {
  phase: number;
  ids: string[];
}

export function readReplyTo(target: TurnTarget): DiscordReplyTo | null {
  const r = target.batch[target.batch.length - 1]?.reply_to as Partial<DiscordReplyTo> | null | undefined;
  if (!r || typeof r.channelId !== 'string' || typeof r.messageId !== 'string') return null;
  return { channelId: r.channelId, messageId: r.messageId, guildId: typeof r.guildId === 'string' ? r.guildId : null };
}

function permanent(err: unknown): boolean {
  return err instanceof DiscordAPIError && err.status >= 400 && err.status < 500 && err.status !== 429;
}

const UNKNOWN_MESSAGE = 10008;

/**
 * One turn on Discord: reply to the message, then edit it as the text streams
 * (at most one edit per message per editIntervalMs; deltas in between are
 * coalesced), continuing in new messages past 2000 characters. All I/O runs in
 * one loop, one request at a time, so what the user sees is never reordered;
 * @discordjs/rest waits out 429s under it. A reset edits the same messages; a
 * retried attempt finds them in the deliveries row (and Discord's enforce_nonce
 * answers a repeated post with the message it already made).
 */
export class DiscordTurnDelivery implements TurnDelivery {
  private text = '';
  private approvals: Array<{ code: string; tool: string; alwaysPermitted: boolean }> = [];
  private msgs: Posted[] = [];
  private phase = 0;
  private closing = false;
  private dead = false;
  private wake: (() => void) | undefined;
  /** Something changed since the loop last looked. */
  private dirty = true;
  private readonly loop: Promise<void>;
  private readonly target: DiscordReplyTo | null;
  private thinking = false;
  private typingTimer: NodeJS.Timeout | undefined;
  private lastEventAt = Date.now();

  constructor(
    private readonly turn: TurnTarget,
    private readonly ctx: DeliverContext,
    private readonly rest: REST,
    private readonly cfg: DiscordSettings,
    private readonly log: Logger,
  ) {
    this.target = readReplyTo(turn);
    if (!this.target) this.log.warn('discord turn without a reply target: nothing will be delivered');
    this.loop = this.target ? this.run() : Promise.resolve();
    this.loop.catch(ignoreError('surfaced by close(), which awaits it'));
    this.setThinking(true);
  }

  event(e: TurnEvent): void {
    try {
      this.lastEventAt = Date.now();
      switch (e.type) {
        case 'text_delta':
          this.text += e.delta;
          if (e.delta.trim()) this.setThinking(false);
          break;
        case 'reset':
          this.text = '';
          this.setThinking(true);
          break;
        case 'tool_start':
          this.setThinking(true);
          break;
        case 'approval_requested':
          if (!this.approvals.some((a) => a.code === e.approval.code)) this.approvals.push({ code: e.approval.code, tool: e.approval.tool, alwaysPermitted: e.approval.alwaysPermitted === true });
          break;
        case 'notice':
          this.text += `${this.text.trim() ? '\n\n' : ''}*${e.text}*\n\n`;
          break;
        case 'error':
          this.text += `${this.text.trim() ? '\n\n' : ''}⚠️ ${e.message}`;
          break;
        default:
          return; // turn_start, tool_end, done (the text is already here)
      }
      this.kick();
    } catch (err) {
      this.log.warn({ err }, 'discord delivery event failed');
    }
  }

  close(): Promise<void> {
    this.closing = true;
    this.stopTyping();
    this.kick();
    return this.loop;
  }

  // ------------------------------------------------------------------ typing

  private setThinking(on: boolean): void {
    if (!this.cfg.typing || !this.target || this.closing || on === this.thinking) return;
    this.thinking = on;
    if (!on) return this.stopTyping();
    this.sendTyping();
    this.typingTimer = setInterval(() => {
      if (!this.thinking || this.closing || Date.now() - this.lastEventAt > TYPING_IDLE_MS) return this.stopTyping();
      this.sendTyping();
    }, TYPING_EVERY_MS);
    this.typingTimer.unref();
  }

  private stopTyping(): void {
    this.thinking = false;
    if (this.typingTimer) clearInterval(this.typingTimer);
    this.typingTimer = undefined;
  }

  private sendTyping(): void {
    void this.rest.post(Routes.channelTyping(this.target!.channelId)).catch((err: unknown) => this.log.debug({ err }, 'typing indicator failed'));
  }

  // ------------------------------------------------------------------ the loop

  private kick(): void {
    this.dirty = true;
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private async run(): Promise<void> {
    await this.init();
    let failingSince: number | null = null;
    let backoff = 500;
    for (;;) {
      if (this.dead) return;
      let wait: number;
      const final = this.closing;
      this.dirty = false;
      try {
        wait = await this.sync(final);
        failingSince = null;
        backoff = 500;
      } catch (err) {
        if (permanent(err)) {
          // Missing access, unknown channel, a body Discord refuses: retrying cannot help.
          this.log.error({ err }, 'discord refused the reply; giving up on this turn\'s delivery');
          this.dead = true;
          return;
        }
        failingSince ??= Date.now();
        if (this.closing && Date.now() - failingSince > this.cfg.deliveryTimeoutMs) {
          this.log.error({ err }, 'discord delivery kept failing; the turn will be retried');
          throw err;
        }
        this.log.warn({ err, retryInMs: backoff }, 'discord delivery failed; retrying');
        wait = backoff;
        backoff = Math.min(backoff * 2, 10_000);
      }
      if (wait < 0) {
        if (final) {
          await this.record(this.approvals.length ? 'parked' : 'delivered');
          return;
        }
        if (!this.dirty && !this.closing) await new Promise<void>((resolve) => (this.wake = resolve));
      } else {
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  /** A retried attempt picks up what the earlier one posted; a resumed (parked) turn starts a new phase. */
  private async init(): Promise<void> {
    if (this.turn.attempt <= 1) return;
    for (let i = 0; ; i++) {
      try {
        const row = await this.ctx.deliveries.get(this.turn.turnId, CHANNEL, this.target!.channelId);
        if (!row) return;
        const body = JSON.parse(row.body ?? '{}') as Partial<RecordBody>;
        const phase = typeof body.phase === 'number' ? body.phase : 0;
        if (row.state === 'parked') {
          // The decision resumed the turn: its continuation is a new reply. The request's buttons go (a decision
          // made elsewhere, over the HTTP API or the CLI, left them there; a click already removed them).
          this.phase = phase + 1;
          const last = body.ids?.at(-1);
          if (last) await this.rest.patch(Routes.channelMessage(this.target!.channelId, last), { body: { components: [] } }).catch((err: unknown) => this.log.debug({ err }, 'could not clear the approval buttons'));
        } else {
          this.phase = phase;
          this.msgs = (body.ids ?? []).map((id) => ({ id, content: '\u0000', components: '?', editedAt: 0 }));
        }
        return;
      } catch (err) {
        if (i >= 4) {
          this.log.warn({ err }, 'could not read the earlier attempt\'s delivery; posting afresh');
          return;
        }
        await new Promise((r) => setTimeout(r, 250 * 2 ** i));
      }
    }
  }

  private desired(final: boolean): Desired[] {
    const body = toDiscordMarkdown(this.text).trim();
    const chunks = body ? splitMessage(body) : [];
    if (chunks.length === 0 && (this.msgs.length || (final && this.approvals.length))) chunks.push(final ? '(no reply)' : PLACEHOLDER);
    // While streaming, messages past the current text (after a reset) show a placeholder; the final pass deletes them.
    if (!final) while (chunks.length < this.msgs.length) chunks.push(PLACEHOLDER);
    const rows = final && this.approvals.length ? approvalRows(this.approvals) : [];
    return chunks.map((content, i) => ({ content, components: i === chunks.length - 1 ? rows : [] }));
  }

  /** Brings Discord in line with the text. Returns -1 when in line, else how long to wait for the next allowed edit. */
  private async sync(final: boolean): Promise<number> {
    const want = this.desired(final);
    for (let i = 0; i < want.length; i++) {
      const d = want[i]!;
      let m = this.msgs[i];
      if (!m) {
        // A repeated post (same nonce) answers with the message an earlier attempt made: it may need an edit.
        m = await this.post(i, d);
        this.msgs.push(m);
        await this.record('streaming');
      }
      if (m.content === d.content && m.components === JSON.stringify(d.components)) continue;
      const due = m.editedAt + this.cfg.editIntervalMs - Date.now();
      // Throttled: later messages wait too, so text never shows out of order.
      if (due > 0) return due;
      await this.edit(i, d);
    }
    if (final && this.msgs.length > want.length) {
      for (const extra of this.msgs.splice(want.length)) await this.remove(extra.id);
      await this.record('streaming');
    }
    return -1;
  }

  /** Discord's enforce_nonce answers a repeated post (same author, same nonce, a few minutes) with the message it already made. */
  private nonce(i: number, salt = ''): string {
    return createHash('sha256').update(`${this.turn.turnId}:${this.phase}:${i}${salt}`).digest('base64url').slice(0, 25);
  }

  private async post(i: number, d: Desired, salt = ''): Promise<Posted> {
    const t = this.target!;
    const res = (await this.rest.post(Routes.channelMessages(t.channelId), {
      body: {
        content: d.content,
        components: d.components,
        allowed_mentions: { parse: [] },
        nonce: this.nonce(i, salt),
        enforce_nonce: true,
        ...(i === 0 ? { message_reference: { message_id: t.messageId, fail_if_not_exists: false } } : {}),
      },
    })) as APIMessage;
    return { id: res.id, content: res.content, components: JSON.stringify(res.components ?? []), editedAt: res.content === d.content ? Date.now() : 0 };
  }

  private async edit(i: number, d: Desired): Promise<void> {
    const t = this.target!;
    const m = this.msgs[i]!;
    try {
      const res = (await this.rest.patch(Routes.channelMessage(t.channelId, m.id), {
        body: { content: d.content, components: d.components, allowed_mentions: { parse: [] } },
      })) as APIMessage;
      this.msgs[i] = { id: m.id, content: res.content ?? d.content, components: JSON.stringify(res.components ?? d.components), editedAt: Date.now() };
    } catch (err) {
      if (!(err instanceof DiscordAPIError && err.code === UNKNOWN_MESSAGE)) throw err;
      // Someone deleted it: post its part again.
      this.log.info({ message: m.id }, 'a reply message was deleted; posting it again');
      this.msgs[i] = await this.post(i, d, `:again:${m.id}`);
      await this.record('streaming');
    }
  }

  private async remove(id: string): Promise<void> {
    try {
      await this.rest.delete(Routes.channelMessage(this.target!.channelId, id));
    } catch (err) {
      if (!(err instanceof DiscordAPIError && err.code === UNKNOWN_MESSAGE)) throw err;
    }
  }

  private async record(state: 'streaming' | 'delivered' | 'parked'): Promise<void> {
    const body: RecordBody = { phase: this.phase, ids: this.msgs.map((m) => m.id) };
    try {
      await this.ctx.deliveries.record(this.turn.turnId, CHANNEL, this.target!.channelId, { platformMessageId: this.msgs[0]?.id ?? null, state, body: JSON.stringify(body) });
    } catch (err) {
      // The nonce still keeps a retried attempt from posting twice for a few minutes.
      this.log.warn({ err }, 'could not record the discord delivery');
    }
  }
}
