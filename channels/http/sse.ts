import type { ServerResponse } from 'node:http';
import type { ApprovalInfo, FinishReason, TurnEvent, TurnUsage } from '../../kernel/turn-events.js';
import { callStatus, ReplyBuffer, withApprovalsText } from '../../src/channel/index.js';

/**
 * Writes OpenAI chat.completion.chunk events from the reply buffer's text.
 * SSE cannot take back text already sent: when the reply is withdrawn (a reset,
 * or a new attempt of the turn) the text that follows is matched against what
 * the client already has and only the new part is sent; a different answer is
 * marked as a break rather than spliced mid-word.
 */
export class ChunkWriter {
  /** Everything the client has been sent. */
  private sent = '';
  /** Where the text being mirrored starts in `sent` (after a break, past it). */
  private from = 0;
  private closed = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly id: string,
    private readonly model: string,
    private readonly created = Math.floor(Date.now() / 1000),
  ) {}

  /** Set while the response head and the opening chunk wait for the first chunk (or OPEN_DELAY_MS). */
  private opening?: NodeJS.Timeout;

  /**
   * Starts the stream: the response head and the opening chunk (the assistant's role) leave with
   * the first chunk written, in the same socket write, or after OPEN_DELAY_MS if none comes by
   * then (a turn that waits on a slow model): one write less per reply, and the client sees the
   * head at once either way.
   */
  open(): void {
    if (this.opening || this.res.headersSent) return;
    this.opening = setTimeout(() => this.flushOpen(), OPEN_DELAY_MS);
    this.res.once('close', () => clearTimeout(this.opening));
  }

  private flushOpen(): void {
    if (!this.opening) return;
    clearTimeout(this.opening);
    this.opening = undefined;
    if (this.closed || this.res.destroyed) return;
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    this.res.socket?.setNoDelay(true);
    this.chunk({ role: 'assistant', content: '' }, null);
  }

  /**
   * The reply is now `text`: sends what the client lacks. `switchboard` rides on
   * the same chunk (an approval card whose text fallback this is), or on a chunk
   * of its own when there is nothing new to send.
   */
  show(text: string, switchboard?: Record<string, unknown>): void {
    const mine = this.sent.slice(this.from);
    let delta = '';
    if (text.startsWith(mine)) delta = text.slice(mine.length);
    else if (!mine.startsWith(text)) {
      // Not a repeat of what the client has (still catching up) but something else.
      delta = `\n\n${text}`;
      this.from = this.sent.length + 2;
    }
    if (!delta) {
      if (switchboard) this.meta(switchboard);
      return;
    }
    this.sent += delta;
    this.write({ ...this.head(), choices: [{ index: 0, delta: { content: delta }, finish_reason: null }], ...(switchboard ? { switchboard } : {}) });
  }

  /** Text that is not part of the mirrored reply (a reply the gateway gives itself). */
  text(delta: string): void {
    this.show(this.sent.slice(this.from) + delta);
  }

  /** What the client has been shown so far. */
  get shown(): string {
    return this.sent;
  }

  finish(finishReason: string, usage: unknown, extra: Record<string, unknown>, includeUsage: boolean): void {
    if (includeUsage) {
      this.chunk({}, finishReason);
      this.write({ ...this.head(), choices: [], usage, ...extra });
    } else {
      this.write({ ...this.head(), choices: [{ index: 0, delta: {}, finish_reason: finishReason }], usage, ...extra });
    }
    this.end();
  }

  /**
   * A chunk with no content and a `switchboard` field (reset, notice): OpenAI
   * clients skip it; Switchboard-aware clients act on it.
   */
  meta(info: Record<string, unknown>): void {
    this.write({ ...this.head(), choices: [{ index: 0, delta: {}, finish_reason: null }], switchboard: info });
  }

  error(message: string, code: string): void {
    this.errorEvent({ error: { message, type: 'server_error', param: null, code } });
  }

  /** An error event of any shape ({ error, switchboard? }), then the end of the stream. */
  errorEvent(body: Record<string, unknown>): void {
    this.write(body);
    this.end();
  }

  end(): void {
    if (this.closed) return;
    this.flushOpen();
    this.closed = true;
    this.res.write('data: [DONE]\n\n');
    this.res.end();
  }

  private head() {
    return { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model };
  }

  private chunk(delta: Record<string, unknown>, finishReason: string | null): void {
    this.write({ ...this.head(), choices: [{ index: 0, delta, finish_reason: finishReason }] });
  }

  private corked = false;

  /** Chunks written in the same tick (a batch of bus events) leave in one socket write. */
  private write(obj: unknown): void {
    if (this.closed) return;
    if (this.opening) {
      // The head and the opening chunk first, in the same socket write as this one.
      this.flushOpen();
      if (this.closed) return;
    }
    if (!this.corked) {
      this.corked = true;
      this.res.cork();
      process.nextTick(() => {
        this.corked = false;
        this.res.uncork();
      });
    }
    this.res.write(`data: ${JSON.stringify(obj)}\n\n`);
  }
}

/** How long the response head may wait for the first chunk to share its socket write (ChunkWriter.open). */
const OPEN_DELAY_MS = 25;

type Done = Extract<TurnEvent, { type: 'done' }>;

/** `switchboard.approval`: the request a Switchboard-aware client renders as a card (answer with POST /v1/approvals/{code}). */
export function approvalObject(a: ApprovalInfo) {
  return {
    code: a.code,
    tool: a.tool,
    tier: a.tier,
    expiresAt: a.expiresAt,
    alwaysPermitted: a.alwaysPermitted === true,
    // false: the requester may not answer it with their own key (an operator must).
    ...(a.selfApprovable !== undefined ? { selfApprovable: a.selfApprovable } : {}),
  };
}

export function finishReasonFor(r: FinishReason): string {
  return r === 'length' ? 'length' : 'stop';
}

export function usageFor(u: TurnUsage) {
  return { prompt_tokens: u.input, completion_tokens: u.output, total_tokens: u.totalTokens };
}

/**
 * The streamed reply of one request: the turn's events through the reply
 * buffer into chunks. Text as content; resets, notices and tool activity as
 * `switchboard` chunks (a parked call: status "waiting for approval (code
 * K7Q4P)" and its code, never "failed"); an approval request as its text
 * fallback in content with the card in `switchboard.approval` on the same chunk.
 */
export class SseReply {
  private readonly reply = new ReplyBuffer();

  constructor(
    private readonly out: ChunkWriter,
    /** The final chunk's extra fields (the `switchboard` object). */
    private readonly extra: (e: Done) => Record<string, unknown>,
    private readonly includeUsage: boolean,
    private readonly notices: string[] = [],
    /** The error event that ends a turn which failed on every provider (finishReason 'error'). */
    private readonly failed?: (e: Done) => Record<string, unknown>,
  ) {}

  /**
   * Something to say before the answer (its conversation waits for an approval): as content, so
   * any client shows it, and as `switchboard.notice`; the answer follows after a break.
   */
  notice(text: string): void {
    this.notices.push(text);
    this.out.show(text, { notice: text });
  }

  /** Returns true once the stream is finished (done or error). */
  event(e: TurnEvent): boolean {
    const out = this.out;
    // The reply as text: what the model said, then the requests' text fallback.
    const shown = () => withApprovalsText(this.reply.text, this.reply.approvals);
    for (const c of this.reply.push(e)) {
      switch (c.kind) {
        case 'text':
          out.show(shown());
          break;
        case 'reset':
          out.meta({ reset: c.reason });
          break;
        case 'notice':
          this.notices.push(c.text);
          out.meta({ notice: c.text });
          break;
        case 'tool':
          out.meta({ tool: { name: c.call.name, status: callStatus(c.call), ...(c.call.code ? { code: c.call.code } : {}) } });
          break;
        case 'approval':
          out.show(shown(), { approval: approvalObject(c.approval) });
          break;
        case 'error':
          out.error(c.message, c.code);
          return true;
        case 'done':
          if (e.type !== 'done') break;
          out.show(shown());
          // 200 is sent already: the stream ends with the error event instead of a finishing chunk.
          if (e.finishReason === 'error' && this.failed) {
            out.errorEvent(this.failed(e));
            return true;
          }
          out.finish(finishReasonFor(e.finishReason), usageFor(e.usage), this.extra(e), this.includeUsage);
          return true;
        default:
          break;
      }
    }
    return false;
  }
}

/**
 * A follower's 'done' for a message that went to an operator while it waited (its turn id is
 * `handoff:<id>`, the gateway's takeover notice as its text): the response names the handoff, as a
 * request to a taken-over conversation is answered (switchboard.handoff).
 */
export function handoffOfDone(e: { turnId: string }): { id: string; state: 'taken' } | undefined {
  return e.turnId.startsWith('handoff:') ? { id: e.turnId.slice('handoff:'.length), state: 'taken' } : undefined;
}
