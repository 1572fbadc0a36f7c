/**
 * Server-sent events from text chunks, as the openai SDK's SSEDecoder reads
 * them: `data:` lines joined with "\n" until a blank line, `event:` kept,
 * comments (`:`) skipped, "\r\n" accepted. One callback per event, no
 * iterator or promise per event. A line or an event longer than `maxBytes`
 * (characters, in fact) throws: a server that never ends a line does not grow
 * this process without bound.
 */
export const SSE_MAX_EVENT = 8 * 1024 * 1024;

export class SseReader {
  private buffer = '';
  private data: string[] = [];
  private event: string | null = null;
  private size = 0;

  constructor(
    private readonly onEvent: (data: string, event: string | null) => void,
    private readonly maxBytes = SSE_MAX_EVENT,
  ) {}

  /** Feeds decoded text; calls onEvent for each event it completes. */
  push(text: string): void {
    const buf = this.buffer ? this.buffer + text : text;
    let start = 0;
    let nl = buf.indexOf('\n');
    while (nl !== -1) {
      const end = nl > start && buf.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
      this.line(buf.slice(start, end));
      start = nl + 1;
      nl = buf.indexOf('\n', start);
    }
    this.buffer = start === 0 ? buf : buf.slice(start);
    if (this.buffer.length + this.size > this.maxBytes) throw new Error(`a server-sent event exceeded ${this.maxBytes} characters`);
  }

  /** The body ended: a last line without its newline, and an event without its blank line, still count. */
  end(): void {
    if (this.buffer) this.line(this.buffer.endsWith('\r') ? this.buffer.slice(0, -1) : this.buffer);
    this.buffer = '';
    this.line('');
  }

  private line(line: string): void {
    if (line === '') {
      if (this.data.length === 0 && this.event === null) return;
      const data = this.data.length === 1 ? this.data[0]! : this.data.join('\n');
      const event = this.event;
      this.data = [];
      this.event = null;
      this.size = 0;
      this.onEvent(data, event);
      return;
    }
    if (line.charCodeAt(0) === 58) return; // ':' comment
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') {
      this.data.push(value);
      this.size += value.length + 1;
    } else if (field === 'event') this.event = value;
  }
}
