import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { ignoreError } from '../../kernel/errors.js';
import type { ApprovalInfo, TurnEvent } from '../../kernel/turn-events.js';
import {
  ChannelDeliveryError,
  type DeliverContext,
  type EditPlatform,
  type Part,
  PostAndEdit,
  type PostedRecord,
  ReplyBuffer,
  type TurnDelivery,
  type TurnTarget,
} from '../../src/channel/index.js';
import { SlackApprovalPoster } from './approval-post.js';
import { isTransient, slackError } from './client.js';
import type { SlackConfig } from './config.js';
import { markdownToMrkdwn } from './format.js';
import { slackReplyText, statusLine } from './reply-text.js';
import type { SlackWhere } from './target.js';

/**
 * Slack's side of the post-and-edit engine: chat.postMessage, chat.update
 * (message_not_found: posted again), chat.delete. A message an attempt that
 * died left streaming natively is stopped before it is edited.
 */
class SlackMessages implements EditPlatform {
  /** Messages an earlier attempt left as open native streams. */
  readonly streaming = new Set<string>();

  constructor(
    private readonly client: WebClient,
    private readonly where: SlackWhere,
  ) {}

  async post(part: Part): Promise<{ id: string }> {
    const r = await this.client.chat.postMessage({
      channel: this.where.channel,
      text: part.content,
      mrkdwn: true,
      ...(this.where.thread_ts ? { thread_ts: this.where.thread_ts } : {}),
    });
    if (!r.ts) throw new Error('chat.postMessage returned no ts');
    return { id: r.ts };
  }

  async edit(id: string, part: Part): Promise<'ok' | 'gone'> {
    if (this.streaming.delete(id))
      await this.client.chat
        .stopStream({ channel: this.where.channel, ts: id } as never)
        .catch(ignoreError('a stream already stopped by Slack is what we want'));
    try {
      await this.client.chat.update({ channel: this.where.channel, ts: id, text: part.content });
      return 'ok';
    } catch (err) {
      if (slackError(err) === 'message_not_found') return 'gone';
      throw err;
    }
  }

  async remove(id: string): Promise<void> {
    if (this.streaming.delete(id))
      await this.client.chat
        .stopStream({ channel: this.where.channel, ts: id } as never)
        .catch(ignoreError('a stream already stopped by Slack is what we want'));
    await this.client.chat.delete({ channel: this.where.channel, ts: id }).catch(ignoreError('a message already deleted is what we want'));
  }

  permanent(err: unknown): boolean {
    return !isTransient(err);
  }

  code(err: unknown): string {
    return slackError(err);
  }
}

/**
 * What a Slack turn posted, in the rows Slack has always kept: one per message,
 * `msg:<channel>:<index>`, state open / streaming / done / parked / deleted. A
 * turn resumed after parking numbers its messages on after the request's.
 */
function slackRecord(ctx: DeliverContext, turnId: string, where: SlackWhere, messages: SlackMessages, log: Logger, seed?: EditSeed): PostedRecord {
  let base = 0;
  let last: string[] = [];
  const key = (i: number) => `msg:${where.channel}:${i}`;
  const record = (i: number, ts: string, state: string) =>
    ctx.deliveries
      .record(turnId, 'slack', key(i), { platformMessageId: ts, state })
      .catch((err: unknown) => log.warn({ err }, 'could not record the Slack message of this turn'));
  return {
    async load() {
      if (seed) {
        // Handed over by the streaming turn: what it posted, without reading the rows again.
        for (const ts of seed.streaming) messages.streaming.add(ts);
        base = seed.base;
        last = [...seed.ids];
        return { phase: 0, ids: [...seed.ids], parked: false };
      }
      const rows = (await ctx.deliveries.forTurn(turnId)).filter((r) => r.channel === 'slack');
      const msgs = rows
        .flatMap((r) => {
          const m = /^msg:(.+):(\d+)$/.exec(r.target);
          return m && m[1] === where.channel ? [{ index: Number(m[2]), state: r.state, ts: r.platformMessageId }] : [];
        })
        .sort((a, b) => a.index - b.index);
      if (!msgs.length) return null;
      const lastParked = msgs.reduce((acc, m) => (m.state === 'parked' ? Math.max(acc, m.index) : acc), -1);
      const mine = msgs.filter((m) => m.index > lastParked && m.state !== 'deleted' && m.ts);
      for (const m of mine) if (m.state === 'streaming') messages.streaming.add(m.ts!);
      base = lastParked >= 0 && !mine.length ? lastParked + 1 : (mine[0]?.index ?? lastParked + 1);
      last = mine.map((m) => m.ts!);
      // The engine counts phases; Slack's rows say it by index: only "resumed after parking" matters here.
      return { phase: 0, ids: lastParked >= 0 && !mine.length ? [] : last, parked: false };
    },
    async save(_phase, ids, state) {
      const rowState = state === 'delivered' ? 'done' : state === 'streaming' ? 'open' : 'parked';
      for (const [i, ts] of ids.entries()) await record(base + i, ts, rowState);
      for (const [i, ts] of last.entries()) if (!ids.includes(ts)) await record(base + i, ts, 'deleted');
      last = [...ids];
    },
  };
}

/** The messages a streaming turn posted before it handed the turn over: rows base, base + 1… */
export interface EditSeed {
  base: number;
  ids: string[];
  /** Those of them still streaming (a stop that failed): stopped before they are edited. */
  streaming: string[];
}

/**
 * A Slack turn without native streaming (no thread to stream in, streaming:
 * 'edit', or an app without the streaming methods), and the fallback of a
 * streaming turn (channels/slack/native-turn.ts): the reply buffer into the
 * post-and-edit engine, a status line under the text (the tool running, the
 * call waiting for approval), and each approval request as its own message with
 * buttons, once per turn.
 */
export class SlackEditTurn implements TurnDelivery {
  private readonly reply = new ReplyBuffer();
  private readonly engine: PostAndEdit;
  private readonly approvals: SlackApprovalPoster;
  private readonly asked = new Set<string>();
  private readonly record: PostedRecord;
  private asking: Promise<void> = Promise.resolve();
  /** An approval request Slack did not take: close() reports it (a delivery job posts it again). */
  private askFailure: ChannelDeliveryError | undefined;
  private closed = false;

  constructor(
    client: WebClient,
    cfg: SlackConfig,
    target: TurnTarget,
    ctx: DeliverContext,
    where: SlackWhere,
    private readonly log: Logger,
    /** From a streaming turn that falls back: what it posted, and the requests it asked. */
    handover: { seed: EditSeed; approvals: SlackApprovalPoster } | undefined = undefined,
  ) {
    const messages = new SlackMessages(client, where);
    this.approvals = handover?.approvals ?? new SlackApprovalPoster(client, where, ctx, target.turnId, log);
    this.record = slackRecord(ctx, target.turnId, where, messages, log, handover?.seed);
    this.engine = new PostAndEdit(
      messages,
      this.record,
      {
        maxChars: cfg.maxMessageChars,
        editIntervalMs: cfg.updateIntervalMs,
        deliveryTimeoutMs: cfg.deliveryTimeoutMs,
        render: (chunk, status) => [chunk.trim() ? markdownToMrkdwn(chunk) : '', status ? `_${status}_` : ''].filter(Boolean).join('\n\n') || '…',
        log,
        ...(ctx.fence ? { fence: ctx.fence } : {}),
      },
      target.attempt > 1 || handover !== undefined,
    );
  }

  event(e: TurnEvent): void {
    if (this.closed) return;
    try {
      if (this.reply.push(e).length) this.engine.show(this.draft());
    } catch (err) {
      this.log.error({ err }, 'slack delivery: event failed');
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.engine.show(this.draft());
    await this.engine.close(this.reply.parked);
    // The requests after the reply they belong to (the turn flushes as soon as it asks).
    for (const a of this.reply.approvals) this.ask(a);
    await this.asking;
    if (this.askFailure) {
      // Not parked as far as a replay is concerned: the delivery job edits these messages (and asks) again, not below them.
      if (this.engine.ids.length) await this.record.save(0, this.engine.ids, 'streaming');
      throw this.askFailure;
    }
  }

  /** A parked reply keeps its status line at the end: the call waiting for approval. */
  private draft() {
    return { text: slackReplyText(this.reply), status: statusLine(this.reply, false), statusAtEnd: statusLine(this.reply, true) };
  }

  /** The request with its buttons, after the reply so far; once per code across attempts. */
  private ask(a: ApprovalInfo): void {
    this.asking = this.asking.then(async () => {
      if (this.asked.has(a.code)) return;
      this.asked.add(a.code);
      await this.approvals.post(a).catch((err: unknown) => {
        const code = slackError(err);
        this.log.warn({ error: code }, 'chat.postMessage (approval) failed');
        this.askFailure ??= new ChannelDeliveryError(`the approval request ${a.code} was not posted: ${code}`, {
          retryable: isTransient(err),
          platformCode: code,
          cause: err,
        });
      });
    });
  }
}
