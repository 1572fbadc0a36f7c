import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Message } from '@mariozechner/pi-ai';
import { promptsDir } from '../kernel/paths.js';
import { Redactor } from '../moat/secrets.js';
import type { ProviderChain } from '../providers/chain.js';
import { inputBudget, SUMMARY_MESSAGE_HEADER } from './context-fit.js';
import { findSecrets, markAuthor, type SecretsPolicy, sendToProvider } from './provider-request.js';
import { estimateTokens } from './token-estimate.js';

export { estimateTokens };

/** How the summarizer's request is guarded: the turn's Redactor and secrets policy. */
export interface SummarySecrets {
  redactor: Redactor;
  policy: SecretsPolicy;
}

/**
 * Compaction keeps a conversation inside the model's window without losing what
 * matters: the oldest part is summarized into one running summary (merged with
 * the previous one, never stacked), cut where no tool call is separated from its
 * result. A summary is accepted only if the model ended
 * normally and said something; otherwise the transcript is kept as it is.
 */
export interface CompactionSettings {
  /** Compact when the estimated context exceeds this share of the model's window. */
  threshold: number;
  /** Share of the window kept as recent messages after compaction. */
  keepRecent: number;
  /** The summarizer's maxTokens, and the most a summary may be (default 1024; never more than SUMMARY_SHARE of the window). */
  summaryMaxTokens?: number;
}

/** A summary takes at most this share of the window it is carried in. */
export const SUMMARY_SHARE = 0.15;
/** What ends a summary cut to its cap (the summarizer wrote more than it was asked). */
export const SUMMARY_CUT_MARKER = '[summary cut to fit]';

/** The most tokens a summary may take in a request whose input budget is `window`. */
export function summaryCap(window: number, settings: Pick<CompactionSettings, 'summaryMaxTokens'>): number {
  return Math.max(64, Math.min(settings.summaryMaxTokens ?? 1024, Math.floor(window * SUMMARY_SHARE)));
}

/** The summary within `maxTokens` (estimated like every request): cut at a word, and marked, when longer. */
export function capSummary(summary: string, maxTokens: number): string {
  const maxChars = maxTokens * 4;
  if (summary.length <= maxChars) return summary;
  let cut = summary.slice(0, Math.max(0, maxChars - SUMMARY_CUT_MARKER.length - 2));
  const space = cut.search(/\s\S*$/);
  if (space > cut.length - 200 && space > 0) cut = cut.slice(0, space);
  return `${cut.trimEnd()}\n${SUMMARY_CUT_MARKER}`;
}

/**
 * Where to cut: the newest messages worth `keepTokens` stay; the cut falls on a
 * user message, so tool calls and their results stay together. Returns the
 * number of old messages to summarize (0 when there is no safe cut).
 */
export function safeCut(messages: readonly Message[], keepTokens: number): number {
  let kept = 0;
  let cut = messages.length;
  for (let i = messages.length - 1; i >= 0; i--) {
    kept += estimateTokens([messages[i]!]);
    if (kept > keepTokens) break;
    cut = i;
  }
  // Never start the kept part with a tool result: its call would be cut off.
  while (cut > 0 && cut < messages.length && messages[cut]!.role === 'toolResult') cut--;
  return cut;
}

let summarizerPrompt: string | undefined;

/** Room in a summarizer request for the words around the transcript ("Previous summary:", "New messages:"...). */
const WRAPPER_TOKENS = 64;
/** Below this many tokens of transcript a chunk, summarizing is not worth a request: the transcript is kept. */
const MIN_CHUNK_TOKENS = 128;

/**
 * The summary of `old` (merged with `previous`), at most `maxTokens`, or null.
 * The transcript goes out through the request builder like every other
 * request, redacted; when it is too large for the summarizer's window (the
 * smallest of its chain's slots), it is summarized chunk by chunk, each request
 * within the window, the running summary folded into the next. Whatever the
 * model writes is cut to `maxTokens` (capSummary). Under policy 'block' it is
 * not sent when the same messages would refuse a turn (a secret in anything
 * but what the model wrote): the transcript is kept.
 */
export async function summarize(
  chain: ProviderChain,
  old: readonly Message[],
  previous: string | null,
  signal?: AbortSignal,
  secrets: SummarySecrets = { redactor: new Redactor(), policy: 'redact' },
  maxTokens = 1024,
): Promise<string | null> {
  summarizerPrompt ??= readFileSync(join(promptsDir, 'summarizer.md'), 'utf8');
  // One user message carries the whole transcript, so who wrote each line is decided here, per message.
  if (secrets.policy === 'block' && findSecrets({ messages: old }, secrets.redactor)) return null;
  const budget = Math.min(...chain.slots.map((s) => inputBudget(s.model, maxTokens)));
  const chunkTokens = budget - estimateTokens([], summarizerPrompt) - maxTokens - WRAPPER_TOKENS;
  if (chunkTokens < MIN_CHUNK_TOKENS) return null; // the summarizer's window is too small to be of use
  let running = previous ? capSummary(previous, maxTokens) : null;
  for (const chunk of chunks(transcriptLines(old), chunkTokens * 4)) {
    const next = await summarizeOnce(chain, chunk, running, maxTokens, secrets.redactor, signal);
    if (!next) return null; // one chunk failed: keep the whole transcript
    running = capSummary(next, maxTokens);
  }
  return running;
}

/** One summarizer request: the running summary and one chunk of transcript. */
async function summarizeOnce(
  chain: ProviderChain,
  transcript: string,
  previous: string | null,
  maxTokens: number,
  redactor: Redactor,
  signal?: AbortSignal,
): Promise<string | null> {
  const s = sendToProvider(
    chain,
    {
      system: [summarizerPrompt!],
      messages: [
        {
          role: 'user',
          content: `${previous ? `Previous summary:\n${previous}\n\n` : ''}New messages:\n${transcript}\n\nWrite the updated summary.`,
          timestamp: Date.now(),
        },
      ],
    },
    { redactor, policy: 'redact', options: { ...(signal ? { signal } : {}), maxTokens } },
  );
  const msg = await s.result();
  if (msg.stopReason !== 'stop') return null; // an error, a cut-off or an abort is not a summary
  const text = msg.content
    .filter((p): p is { type: 'text'; text: string } => p.type === 'text')
    .map((p) => p.text)
    .join('')
    .trim();
  return text || null;
}

/** One line per message: who wrote it, and what (tool calls shown by name and arguments). */
function transcriptLines(old: readonly Message[]): string[] {
  return old.map((m) => {
    const role = m.role === 'toolResult' ? `tool ${m.toolName}` : m.role;
    const text =
      typeof m.content === 'string'
        ? m.content
        : (m.content as Array<{ type: string; text?: string; name?: string; arguments?: unknown }>)
            .map((p) => (p.type === 'text' ? p.text : p.type === 'toolCall' ? `[calls ${p.name} ${JSON.stringify(p.arguments)}]` : ''))
            .join(' ');
    return `${role}: ${text}`;
  });
}

/** The lines packed into chunks of at most `maxChars` (a longer line is split across chunks). */
export function chunks(lines: readonly string[], maxChars: number): string[] {
  const out: string[] = [];
  let cur = '';
  for (const line of lines) {
    const pieces: string[] = [];
    for (let i = 0; i < line.length; i += maxChars) pieces.push(line.slice(i, i + maxChars));
    for (const piece of pieces.length ? pieces : ['']) {
      if (cur && cur.length + 1 + piece.length > maxChars) {
        out.push(cur);
        cur = '';
      }
      cur = cur ? `${cur}\n${piece}` : piece;
    }
  }
  if (cur) out.push(cur);
  return out;
}

/** The summary as the model sees it. */
export function summaryMessage(summary: string): Message {
  return markAuthor({ role: 'user', content: `${SUMMARY_MESSAGE_HEADER}\n${summary}`, timestamp: 0 }, 'model');
}

/**
 * Compaction inside a turn, between model calls (pi-agent-core's transformContext):
 * the loop's message list only grows, so the summary and the cut are remembered
 * and only the part that newly outgrew the window is summarized.
 */
export class InTurnCompactor {
  private cut = 0;
  private summary: string | null;
  /** The summary message of the current cut (one object, so the request builder scans it once). */
  private shown: { summary: string; message: Message } | null = null;

  constructor(
    private readonly chain: ProviderChain,
    /** The input budget of the model's window (src/context-fit.ts inputBudget, less the tool definitions). */
    private readonly window: number,
    private readonly settings: CompactionSettings,
    initialSummary: string | null,
    private readonly onCompacted?: (info: { summarized: number; tokensBefore: number; tokensAfter: number }) => void,
    private readonly secrets?: SummarySecrets,
  ) {
    this.summary = initialSummary;
  }

  private view(messages: readonly Message[]): Message[] {
    const rest = messages.slice(this.cut);
    if (!(this.cut > 0 && this.summary)) return [...rest];
    if (this.shown?.summary !== this.summary) this.shown = { summary: this.summary, message: summaryMessage(this.summary) };
    return [this.shown.message, ...rest];
  }

  /** The messages the model sees; compacts first when they outgrew the threshold. */
  async transform(messages: readonly Message[], system: string, signal?: AbortSignal, force = false): Promise<Message[]> {
    const current = this.view(messages);
    const before = estimateTokens(current, system);
    if (!force && before <= this.settings.threshold * this.window) return current;
    const rest = messages.slice(this.cut);
    // Forced (the provider said the context overflowed): keep half as much.
    const n = safeCut(rest, Math.floor((this.settings.keepRecent * this.window) / (force ? 2 : 1)));
    if (n <= 0) return current;
    const summary = await summarize(this.chain, rest.slice(0, n), this.summary, signal, this.secrets, summaryCap(this.window, this.settings));
    if (!summary) return current; // keep everything; try again at the next call
    this.summary = summary;
    this.cut += n;
    const after = this.view(messages);
    this.onCompacted?.({ summarized: n, tokensBefore: before, tokensAfter: estimateTokens(after, system) });
    return after;
  }

  /** How many of the messages given at the start were folded into the summary. */
  get compactedCount(): number {
    return this.cut;
  }

  get currentSummary(): string | null {
    return this.summary;
  }
}
