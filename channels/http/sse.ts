import type { ServerResponse } from 'node:http';

/**
 * Writes OpenAI chat.completion.chunk events. Handles a turn that restarts
 * (its worker died, or a provider fell over mid-stream): SSE cannot take back
 * text already sent, so the restarted attempt's text is matched against what
 * the client already has and only the new part is sent.
 */
export class ChunkWriter {
  private sent = '';
  /** Text of the current attempt while it is still catching up with `sent`. */
  private replay: string | null = null;
  private closed = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly id: string,
    private readonly model: string,
    private readonly created = Math.floor(Date.now() / 1000),
  ) {}

  open(): void {
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    this.res.socket?.setNoDelay(true);
    this.chunk({ role: 'assistant', content: '' }, null);
  }

  /** A new attempt of the same turn starts: its text will repeat what was sent. */
  restart(): void {
    if (this.sent) this.replay = '';
  }

  text(delta: string): void {
    if (this.replay !== null) {
      this.replay += delta;
      if (this.sent.startsWith(this.replay)) return; // still repeating what the client has
      if (this.replay.startsWith(this.sent)) {
        delta = this.replay.slice(this.sent.length);
      } else {
        // The new attempt says something else: mark the break rather than splice mid-word.
        delta = '\n\n' + this.replay;
      }
      this.replay = null;
    }
    if (!delta) return;
    this.sent += delta;
    this.chunk({ content: delta }, null);
  }

  /** What the client has been shown so far. */
  get shown(): string {
    return this.sent;
  }

  finish(finishReason: string, usage: unknown, extra: Record<string, unknown>, includeUsage: boolean): void {
    if (includeUsage) {
      this.chunk({}, finishReason);
      this.write({ ...this.base(), choices: [], usage, ...extra });
    } else {
      this.write({ ...this.base(), choices: [{ index: 0, delta: {}, finish_reason: finishReason }], usage, ...extra });
    }
    this.end();
  }

  /**
   * A chunk with no content and a `switchboard` field (reset, notice): OpenAI
   * clients skip it; Switchboard-aware clients act on it.
   */
  meta(info: Record<string, unknown>): void {
    this.write({ ...this.base(), choices: [{ index: 0, delta: {}, finish_reason: null }], switchboard: info });
  }

  error(message: string, code: string): void {
    this.write({ error: { message, type: 'server_error', param: null, code } });
    this.end();
  }

  end(): void {
    if (this.closed) return;
    this.closed = true;
    this.res.write('data: [DONE]\n\n');
    this.res.end();
  }

  private base() {
    return { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model };
  }

  private chunk(delta: Record<string, unknown>, finishReason: string | null): void {
    this.write({ ...this.base(), choices: [{ index: 0, delta, finish_reason: finishReason }] });
  }

  private corked = false;

  /** Chunks written in the same tick (a batch of bus events) leave in one socket write. */
  private write(obj: unknown): void {
    if (this.closed) return;
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
