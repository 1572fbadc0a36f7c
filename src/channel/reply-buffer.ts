import type { ApprovalInfo, FinishReason, TurnEvent } from '../../kernel/turn-events.js';

/**
 * What a turn has said so far, as every deliverer needs it: the reply text (a
 * reset withdraws the current model message, back to the last boundary),
 * notices and errors in the place they were said, the tool calls and their
 * state, the approval requests as structured data, and how the turn ended.
 * Fed TurnEvents in order; `push` never throws and says what changed.
 *
 * A parked call is `waiting` (never `failed`): tool_end with `pending`, or,
 * from a turn that does not send `pending` yet, a failed tool_end that an
 * approval_requested for the same tool follows before anything else is said.
 */
export type ReplyPart = { kind: 'text'; text: string } | { kind: 'notice'; text: string } | { kind: 'error'; text: string; code: string };

export type ToolCallState = 'running' | 'done' | 'failed' | 'waiting';

export interface ToolCall {
  id: string;
  name: string;
  state: ToolCallState;
  /** The approval code, for a waiting call. */
  code?: string;
}

/** What one event changed. `tool`: a call whose state became known (started, done, failed, waiting). */
export type ReplyChange =
  | { kind: 'start'; attempt: number }
  | { kind: 'text' }
  | { kind: 'reset'; reason: string }
  | { kind: 'tool'; call: ToolCall }
  | { kind: 'notice'; text: string }
  | { kind: 'approval'; approval: ApprovalInfo }
  | { kind: 'error'; message: string; code: string }
  | { kind: 'done'; finishReason: FinishReason };

export interface ComposeFormat {
  notice(text: string): string;
  error(message: string): string;
}

export class ReplyBuffer {
  private parts: ReplyPart[] = [];
  /** The last text part is the current model message (a reset withdraws it) until a boundary seals it. */
  private open = false;
  readonly calls: ToolCall[] = [];
  /** Failed calls that may yet turn out to be parked (see the class comment). */
  private unsure: ToolCall[] = [];
  readonly approvals: ApprovalInfo[] = [];
  finishReason: FinishReason | null = null;
  attempt = 1;

  push(e: TurnEvent): ReplyChange[] {
    const out: ReplyChange[] = [];
    // Anything but another call or its approval means the failed calls really failed.
    if (e.type !== 'approval_requested' && e.type !== 'tool_start' && e.type !== 'tool_end' && !(e.type === 'done' && e.finishReason === 'approval_pending'))
      this.settle(out);
    switch (e.type) {
      case 'turn_start':
        this.attempt = e.attempt;
        if (e.attempt > 1) this.clear();
        out.push({ kind: 'start', attempt: e.attempt });
        break;
      case 'text_delta': {
        if (!e.delta) break;
        const last = this.parts[this.parts.length - 1];
        if (this.open && last?.kind === 'text') last.text += e.delta;
        else this.parts.push({ kind: 'text', text: e.delta });
        this.open = true;
        out.push({ kind: 'text' });
        break;
      }
      case 'reset':
        if (this.open && this.parts[this.parts.length - 1]?.kind === 'text') this.parts.pop();
        this.open = false;
        out.push({ kind: 'reset', reason: e.reason });
        break;
      case 'tool_start': {
        this.open = false;
        const call: ToolCall = { id: e.toolCallId, name: e.name, state: 'running' };
        this.calls.push(call);
        out.push({ kind: 'tool', call: { ...call } });
        break;
      }
      case 'tool_end': {
        this.open = false;
        let call = this.calls.find((c) => c.id === e.toolCallId);
        if (!call) this.calls.push((call = { id: e.toolCallId, name: e.name, state: 'running' }));
        if (e.pending) {
          call.state = 'waiting';
          call.code = e.pending.code;
        } else if (e.isError) {
          call.state = 'failed';
          this.unsure.push(call);
          break; // said once it is known not to be parked
        } else call.state = 'done';
        out.push({ kind: 'tool', call: { ...call } });
        break;
      }
      case 'approval_requested': {
        this.open = false;
        const a = e.approval;
        if (!this.approvals.some((x) => x.code === a.code)) {
          this.approvals.push(a);
          out.push({ kind: 'approval', approval: a });
        }
        const i = this.unsure.findIndex((c) => c.name === a.tool);
        if (i >= 0 && !this.calls.some((c) => c.code === a.code)) {
          const call = this.unsure.splice(i, 1)[0]!;
          call.state = 'waiting';
          call.code = a.code;
          out.push({ kind: 'tool', call: { ...call } });
        }
        break;
      }
      case 'notice':
        this.open = false;
        this.parts.push({ kind: 'notice', text: e.text });
        out.push({ kind: 'notice', text: e.text });
        break;
      case 'error':
        this.open = false;
        this.parts.push({ kind: 'error', text: e.message, code: e.code });
        out.push({ kind: 'error', message: e.message, code: e.code });
        break;
      case 'done':
        for (const a of e.approvals ?? []) out.push(...this.push({ type: 'approval_requested', turnId: e.turnId, approval: a }));
        this.settle(out);
        // A done that arrives alone (replayed from the store) carries the whole text.
        if (!this.parts.some((p) => p.kind === 'text') && e.text) {
          this.parts.unshift({ kind: 'text', text: e.text });
          out.push({ kind: 'text' });
        }
        this.open = false;
        this.finishReason = e.finishReason;
        out.push({ kind: 'done', finishReason: e.finishReason });
        break;
    }
    return out;
  }

  /** The model's reply so far (what done.text adds up to), without notices. */
  get text(): string {
    return this.parts.map((p) => (p.kind === 'text' ? p.text : '')).join('');
  }

  /** The reply with notices and errors where they were said, in a platform's markup. */
  compose(fmt: ComposeFormat): string {
    let out = '';
    for (const p of this.parts) {
      if (p.kind === 'text') out += out && !/^\s/.test(p.text) && !/\s$/.test(out) ? `\n\n${p.text}` : p.text;
      else out = `${out.trimEnd()}${out.trim() ? '\n\n' : ''}${p.kind === 'notice' ? fmt.notice(p.text) : fmt.error(p.text)}`;
    }
    return out;
  }

  get notices(): string[] {
    return this.parts.flatMap((p) => (p.kind === 'notice' ? [p.text] : []));
  }

  get errors(): Array<{ message: string; code: string }> {
    return this.parts.flatMap((p) => (p.kind === 'error' ? [{ message: p.text, code: p.code }] : []));
  }

  /** The call running now, if any (a status line while a tool runs). */
  get running(): ToolCall | undefined {
    return [...this.calls].reverse().find((c) => c.state === 'running');
  }

  /** Calls parked for an operator. */
  get waiting(): ToolCall[] {
    return this.calls.filter((c) => c.state === 'waiting');
  }

  /** The turn parked (or is parking): approval requests were made. */
  get parked(): boolean {
    return this.approvals.length > 0 || this.finishReason === 'approval_pending';
  }

  private settle(out: ReplyChange[]): void {
    for (const call of this.unsure.splice(0)) out.push({ kind: 'tool', call: { ...call } });
  }

  private clear(): void {
    this.parts = [];
    this.open = false;
    this.calls.length = 0;
    this.unsure = [];
    this.approvals.length = 0;
    this.finishReason = null;
  }
}

/** How a call reads in a status line or a tool log: "waiting for approval (code K7Q4P)", never "failed" for a parked call. */
export function callStatus(call: ToolCall): string {
  switch (call.state) {
    case 'running':
      return 'started';
    case 'done':
      return 'done';
    case 'failed':
      return 'failed';
    case 'waiting':
      return `waiting for approval (code ${call.code ?? '?'})`;
  }
}
