import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Message } from '@mariozechner/pi-ai';
import { promptsDir } from '../kernel/paths.js';
import { Redactor } from '../moat/secrets.js';
import type { ProviderChain } from '../providers/chain.js';
import { findSecrets, markAuthor, type SecretsPolicy, sendToProvider } from './provider-request.js';

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
}

/** A rough token estimate: ~4 characters a token, plus a little per message. */
export function estimateTokens(messages: readonly Message[], system = ''): number {
  let chars = system.length;
  for (const m of messages) chars += messageChars(m) + 16;
  return Math.ceil(chars / 4);
}

function messageChars(m: Message): number {
  if (typeof m.content === 'string') return m.content.length;
  let n = 0;
  for (const p of m.content as Array<{ type: string; text?: string; thinking?: string; arguments?: unknown; data?: string }>) {
    if (p.type === 'text') n += p.text?.length ?? 0;
    else if (p.type === 'thinking') n += p.thinking?.length ?? 0;
    else if (p.type === 'toolCall') n += JSON.stringify(p.arguments ?? {}).length + 32;
    else n += 1000; // images and others
  }
  return n;
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

/**
 * The summary of `old` (merged with `previous`), or null. The transcript goes
 * out through the request builder like every other request, redacted. Under
 * policy 'block' it is not sent when the same messages would refuse a turn
 * (a secret in anything but what the model wrote): the transcript is kept.
 */
export async function summarize(
  chain: ProviderChain,
  old: readonly Message[],
  previous: string | null,
  signal?: AbortSignal,
  secrets: SummarySecrets = { redactor: new Redactor(), policy: 'redact' },
): Promise<string | null> {
  summarizerPrompt ??= readFileSync(join(promptsDir, 'summarizer.md'), 'utf8');
  // One user message carries the whole transcript, so who wrote each line is decided here, per message.
  if (secrets.policy === 'block' && findSecrets({ messages: old }, secrets.redactor)) return null;
  const transcript = old
    .map((m) => {
      const role = m.role === 'toolResult' ? `tool ${m.toolName}` : m.role;
      const text =
        typeof m.content === 'string'
          ? m.content
          : (m.content as Array<{ type: string; text?: string; name?: string; arguments?: unknown }>)
              .map((p) => (p.type === 'text' ? p.text : p.type === 'toolCall' ? `[calls ${p.name} ${JSON.stringify(p.arguments)}]` : ''))
              .join(' ');
      return `${role}: ${text}`;
    })
    .join('\n');
  const s = sendToProvider(
    chain,
    {
      system: [summarizerPrompt],
      messages: [
        {
          role: 'user',
          content: `${previous ? `Previous summary:\n${previous}\n\n` : ''}New messages:\n${transcript}\n\nWrite the updated summary.`,
          timestamp: Date.now(),
        },
      ],
    },
    { redactor: secrets.redactor, policy: 'redact', options: { ...(signal ? { signal } : {}), maxTokens: 1024 } },
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

/** The summary as the model sees it. */
export function summaryMessage(summary: string): Message {
  return markAuthor({ role: 'user', content: `[Summary of the earlier conversation, which is no longer shown]\n${summary}`, timestamp: 0 }, 'model');
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
    const summary = await summarize(this.chain, rest.slice(0, n), this.summary, signal, this.secrets);
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
