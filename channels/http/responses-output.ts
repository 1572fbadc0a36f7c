import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { ApprovalInfo, TurnEvent, TurnUsage } from '../../kernel/turn-events.js';
import { ReplyBuffer, withApprovalsText } from '../../src/channel/index.js';

/**
 * A turn's events as Responses API output items, and (when streaming) as the documented stream
 * events, each with its `sequence_number`. The answer's text goes into `message` items; the
 * gateway's own tool calls are `mcp_call` items (server_label "switchboard": tools the server ran,
 * not function calls the client must run), a call waiting for an operator an `mcp_approval_request`
 * item. A tool call closes the message before it; text after it opens a new one.
 *
 * SSE cannot take text back: after a reset (a provider failed mid-answer) the text that follows is
 * matched against what the client has and only the new part is sent, as chat completions does.
 */

export const SERVER_LABEL = 'switchboard';

type OutputText = { type: 'output_text'; text: string; annotations: []; logprobs: [] };
type MessageItem = { type: 'message'; id: string; status: 'in_progress' | 'completed'; role: 'assistant'; content: OutputText[] };
type McpCallItem = {
  type: 'mcp_call';
  id: string;
  status: 'in_progress' | 'completed' | 'failed' | 'incomplete';
  server_label: string;
  name: string;
  arguments: string;
  output: null;
  error: string | null;
  approval_request_id: string | null;
};
type ApprovalItem = { type: 'mcp_approval_request'; id: string; server_label: string; name: string; arguments: string };
export type OutputItem = MessageItem | McpCallItem | ApprovalItem;

export type StreamEvent = { type: string } & Record<string, unknown>;

export function responsesUsage(u: TurnUsage) {
  return {
    input_tokens: u.input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: u.totalTokens,
  };
}

const shortId = () => randomUUID().replace(/-/g, '').slice(0, 24);
const argsText = (args: unknown) => {
  try {
    return JSON.stringify(args ?? {});
  } catch {
    return '{}';
  }
};

export class ResponseOutput {
  readonly items: OutputItem[] = [];
  readonly notices: string[] = [];
  private readonly reply = new ReplyBuffer();
  private readonly args = new Map<string, unknown>();
  private readonly calls = new Map<string, McpCallItem>();
  /** Everything put into message items; where the mirrored text starts in it (after a break, past it). */
  private sent = '';
  private from = 0;
  private open?: MessageItem;

  /** emit: a stream event (without its sequence number), when streaming. */
  constructor(private readonly emit: (e: StreamEvent) => void = () => {}) {}

  /** Text the gateway says before the answer (its conversation waits for an approval). */
  notice(text: string): void {
    this.notices.push(text);
    this.show(text);
  }

  /** Text the gateway says itself (an approval answer): one message, closed. */
  say(text: string): void {
    this.show(text);
    this.closeMessage();
  }

  /** Closes the open message item (a response answered before its turn, "queued"). */
  close(): void {
    this.closeMessage();
  }

  /** Feeds one turn event; returns the turn's last event once it ends (done or error). */
  event(e: TurnEvent): Extract<TurnEvent, { type: 'done' | 'error' }> | undefined {
    if (e.type === 'tool_start') this.args.set(e.toolCallId, e.args);
    const shown = () => withApprovalsText(this.reply.text, this.reply.approvals);
    for (const c of this.reply.push(e)) {
      switch (c.kind) {
        case 'text':
          this.show(shown());
          break;
        case 'notice':
          this.notices.push(c.text);
          break;
        case 'tool':
          this.tool(c.call.id, c.call.name, c.call.state);
          break;
        case 'approval':
          this.show(shown());
          this.approval(c.approval);
          break;
        case 'done':
          if (e.type === 'done') this.show(shown());
          break;
        default:
          break;
      }
    }
    if (e.type === 'done' || e.type === 'error') {
      this.closeMessage();
      return e;
    }
    return undefined;
  }

  /** The reply is now `text`: whatever the client lacks goes into the open message item. */
  private show(text: string): void {
    const mine = this.sent.slice(this.from);
    let delta = '';
    if (text.startsWith(mine)) delta = text.slice(mine.length);
    else if (!mine.startsWith(text)) {
      delta = `${this.sent ? '\n\n' : ''}${text}`;
      this.from = this.sent.length + (this.sent ? 2 : 0);
    }
    if (!delta) return;
    this.sent += delta;
    const item = this.openMessage();
    const part = item.content[0]!;
    part.text += delta;
    this.emit({ type: 'response.output_text.delta', item_id: item.id, output_index: this.items.indexOf(item), content_index: 0, delta, logprobs: [] });
  }

  private openMessage(): MessageItem {
    if (this.open) return this.open;
    const item: MessageItem = { type: 'message', id: `msg_${shortId()}`, status: 'in_progress', role: 'assistant', content: [] };
    this.items.push(item);
    this.open = item;
    const output_index = this.items.length - 1;
    this.emit({ type: 'response.output_item.added', output_index, item: structuredClone(item) });
    const part: OutputText = { type: 'output_text', text: '', annotations: [], logprobs: [] };
    item.content.push(part);
    this.emit({ type: 'response.content_part.added', item_id: item.id, output_index, content_index: 0, part: structuredClone(part) });
    return item;
  }

  private closeMessage(): void {
    const item = this.open;
    if (!item) return;
    this.open = undefined;
    const output_index = this.items.indexOf(item);
    const part = item.content[0]!;
    this.emit({ type: 'response.output_text.done', item_id: item.id, output_index, content_index: 0, text: part.text, logprobs: [] });
    this.emit({ type: 'response.content_part.done', item_id: item.id, output_index, content_index: 0, part: structuredClone(part) });
    item.status = 'completed';
    this.emit({ type: 'response.output_item.done', output_index, item: structuredClone(item) });
  }

  private tool(callId: string, name: string, state: 'running' | 'done' | 'failed' | 'waiting'): void {
    let item = this.calls.get(callId);
    if (!item) {
      this.closeMessage();
      item = {
        type: 'mcp_call',
        id: `mcp_${shortId()}`,
        status: 'in_progress',
        server_label: SERVER_LABEL,
        name,
        arguments: argsText(this.args.get(callId)),
        output: null,
        error: null,
        approval_request_id: null,
      };
      this.calls.set(callId, item);
      this.items.push(item);
      const output_index = this.items.length - 1;
      this.emit({ type: 'response.output_item.added', output_index, item: structuredClone(item) });
      this.emit({ type: 'response.mcp_call.in_progress', item_id: item.id, output_index });
      this.emit({ type: 'response.mcp_call_arguments.done', item_id: item.id, output_index, arguments: item.arguments });
    }
    if (state === 'running' || item.status !== 'in_progress') return;
    const output_index = this.items.indexOf(item);
    // A parked call did not run and did not fail: it waits for an operator (the approval request item follows).
    item.status = state === 'done' ? 'completed' : state === 'failed' ? 'failed' : 'incomplete';
    if (state === 'failed') item.error = 'the tool call failed';
    if (state === 'done') this.emit({ type: 'response.mcp_call.completed', item_id: item.id, output_index });
    if (state === 'failed') this.emit({ type: 'response.mcp_call.failed', item_id: item.id, output_index });
    this.emit({ type: 'response.output_item.done', output_index, item: structuredClone(item) });
  }

  private approval(a: ApprovalInfo): void {
    this.closeMessage();
    const item: ApprovalItem = { type: 'mcp_approval_request', id: `mcpr_${a.code}`, server_label: SERVER_LABEL, name: a.tool, arguments: argsText(a.args) };
    const waiting = [...this.calls.values()].find((c) => c.name === a.tool && c.status === 'incomplete' && !c.approval_request_id);
    if (waiting) waiting.approval_request_id = item.id;
    this.items.push(item);
    const output_index = this.items.length - 1;
    this.emit({ type: 'response.output_item.added', output_index, item: structuredClone(item) });
    this.emit({ type: 'response.output_item.done', output_index, item: structuredClone(item) });
  }
}

/** Writes stream events as SSE (`event:` and `data:` lines), numbering them from 0. */
export class EventWriter {
  private seq = 0;
  private ended = false;
  private corked = false;

  constructor(private readonly res: ServerResponse) {}

  open(): void {
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    this.res.socket?.setNoDelay(true);
  }

  write(e: StreamEvent): void {
    if (this.ended) return;
    if (!this.corked) {
      this.corked = true;
      this.res.cork();
      process.nextTick(() => {
        this.corked = false;
        this.res.uncork();
      });
    }
    const numbered = { ...e, sequence_number: this.seq++ };
    this.res.write(`event: ${e.type}\ndata: ${JSON.stringify(numbered)}\n\n`);
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.res.end();
  }
}
