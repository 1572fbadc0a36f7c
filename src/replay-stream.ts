import { type AssistantMessage, type AssistantMessageEventStream, createAssistantMessageEventStream } from '@mariozechner/pi-ai';

/**
 * The two streams of resume-not-rerun (src/turn/journal.ts), for the agent loop's
 * stream function: a journaled response played back, and a live one held at its
 * end until it is journaled.
 */

/** A journaled model response as a stream: its text again as deltas, its tool calls, done; no provider is asked. */
export function replayStream(message: AssistantMessage): AssistantMessageEventStream {
  const out = createAssistantMessageEventStream();
  queueMicrotask(() => {
    const partial: AssistantMessage = { ...message, content: [] };
    out.push({ type: 'start', partial });
    message.content.forEach((part, i) => {
      partial.content.push(part);
      if (part.type === 'text') {
        out.push({ type: 'text_start', contentIndex: i, partial });
        out.push({ type: 'text_delta', contentIndex: i, delta: part.text, partial });
        out.push({ type: 'text_end', contentIndex: i, content: part.text, partial });
      } else if (part.type === 'toolCall') {
        out.push({ type: 'toolcall_start', contentIndex: i, partial });
        out.push({ type: 'toolcall_end', contentIndex: i, toolCall: part, partial });
      }
    });
    const reason = message.stopReason === 'stop' || message.stopReason === 'length' ? message.stopReason : 'toolUse';
    out.push({ type: 'done', reason, message });
  });
  return out;
}

/**
 * Passes a live stream through, but holds its `done` until `keep(message)` has
 * settled, so nothing of the response (its tool calls) is acted on before it is
 * journaled. When keep fails the response ends as aborted (the caller stops the turn).
 */
export function keptBeforeDone(source: AssistantMessageEventStream, keep: (m: AssistantMessage) => Promise<void> | undefined): AssistantMessageEventStream {
  const out = createAssistantMessageEventStream();
  const abortWith = (m: AssistantMessage, err: unknown) =>
    out.push({ type: 'error', reason: 'aborted', error: { ...m, stopReason: 'aborted', errorMessage: (err as Error).message } });
  void (async () => {
    for await (const ev of source) {
      if (ev.type === 'done') {
        try {
          await keep(ev.message);
        } catch (err) {
          return abortWith(ev.message, err);
        }
      }
      out.push(ev);
      if (ev.type === 'done' || ev.type === 'error') return;
    }
    out.end(await source.result());
  })().catch((err: unknown) => {
    // The source failed outside its own error event: end as aborted rather than leave the loop waiting.
    abortWith(
      { role: 'assistant', content: [], api: '', provider: '', model: '', usage: ZERO_USAGE, stopReason: 'aborted', timestamp: Date.now() } as AssistantMessage,
      err,
    );
  });
  return out;
}

const ZERO_USAGE = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
