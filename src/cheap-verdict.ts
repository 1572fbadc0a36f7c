/**
 * One yes/no question to a cheap provider slot (ambient mode's "chime in?", a schedule's check):
 * the slot alone (no fallback to the turn's expensive slots, no busy retries, short timeouts),
 * through the request builder like every request (redacted). Anything but a clear YES — an
 * error, a timeout, an unknown slot, a hedge — is NO: the callers treat NO as the safe side.
 */
import type { Logger } from 'pino';
import type { CooldownStore } from '../kernel/cooldowns.js';
import { type MessageSecretPolicy, Redactor } from '../moat/secrets.js';
import { FallbackChain, type FallbackSettings, type ProviderChain } from '../providers/chain.js';
import { sendToProvider } from './provider-request.js';

export interface CheapVerdictDeps {
  chain: ProviderChain | null;
  cooldowns: CooldownStore;
  settings: FallbackSettings;
  secrets: MessageSecretPolicy;
  log: Logger;
}

export class CheapVerdict {
  private readonly bySlot = new Map<string, FallbackChain | null>();

  constructor(private readonly deps: CheapVerdictDeps) {}

  /** Whether `slotId` answers YES to `question` under `system`; false on anything else. Never throws. */
  async yes(slotId: string, system: string, question: string, what: string): Promise<boolean> {
    const chain = this.chainFor(slotId, what);
    if (!chain) return false;
    try {
      const s = sendToProvider(
        chain,
        { system: [system], messages: [{ role: 'user', content: question, timestamp: Date.now() }] },
        { redactor: new Redactor(), policy: this.deps.secrets, options: { maxTokens: 8 } },
      );
      const msg = await s.result();
      if (msg.stopReason !== 'stop' && msg.stopReason !== 'length') return false;
      const answer = msg.content
        .filter((p): p is { type: 'text'; text: string } => p.type === 'text')
        .map((p) => p.text)
        .join('');
      return parseYes(answer);
    } catch (err) {
      this.deps.log.debug({ err, slot: slotId, what }, 'cheap check failed; taking NO');
      return false;
    }
  }

  private chainFor(slotId: string, what: string): FallbackChain | null {
    if (this.bySlot.has(slotId)) return this.bySlot.get(slotId)!;
    const slot = this.deps.chain?.slots.find((s) => s.id === slotId);
    if (!slot) this.deps.log.warn({ slot: slotId, what }, 'a cheap-check slot names no provider slot; its answer is always NO');
    const t = this.deps.settings.timeouts;
    const settings: FallbackSettings = {
      ...this.deps.settings,
      busyRetryMs: 0,
      busyNoticeMs: Number.MAX_SAFE_INTEGER,
      timeouts: {
        connectMs: Math.min(t.connectMs, 5_000),
        firstTokenMs: Math.min(t.firstTokenMs, 10_000),
        idleMs: Math.min(t.idleMs, 10_000),
        totalMs: Math.min(t.totalMs, 15_000),
      },
    };
    const chain = slot ? new FallbackChain([slot], this.deps.cooldowns, settings) : null;
    this.bySlot.set(slotId, chain);
    return chain;
  }
}

/** The answer's first word is YES (markdown and quotes around it allowed). */
export function parseYes(text: string): boolean {
  return /^[\s*_"'`.]*YES\b/i.test(text);
}
