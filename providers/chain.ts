import { streamSimple, type Api, type AssistantMessageEventStream, type Context, type Model, type SimpleStreamOptions } from '@mariozechner/pi-ai';
import type { ProviderSlot } from './slot.js';

/** One model call attempt, for the turn's ledger. */
export interface Attempt {
  slot: string;
  /** Error class, or 'ok'. */
  error: string;
  ms: number;
}

/** What the chain tells the turn while a model call runs. */
export interface ChainHooks {
  /** The partial reply must be withdrawn (switching slots after text streamed). */
  onReset?(reason: string): void;
  onAttempt?(a: Attempt): void;
  onNotice?(text: string): void;
}

/**
 * The provider seam. The agent loop calls stream() for every model call; the
 * chain decides which slot answers. This is the single-slot chain; the fallback
 * chain (ordered slots, error classes, shared cooldowns) plugs in here.
 */
export interface ProviderChain {
  readonly slots: readonly ProviderSlot[];
  /** The model the loop reports against (the first slot's). */
  readonly primary: Model<Api>;
  stream(context: Context, options: SimpleStreamOptions, hooks: ChainHooks): AssistantMessageEventStream;
  /** Id of the slot that answered the last successful call made with these hooks. */
}

export interface ChainOptions {
  timeoutMs: number;
}

export function singleSlotChain(slot: ProviderSlot, opts: ChainOptions): ProviderChain {
  return {
    slots: [slot],
    primary: slot.model,
    stream(context, options, hooks) {
      const started = Date.now();
      // maxRetries 0: the chain decides about retries, not the SDK.
      const s = streamSimple(slot.model, context, { ...options, apiKey: slot.apiKey, maxRetries: 0, timeoutMs: opts.timeoutMs });
      void s.result().then((m) =>
        hooks.onAttempt?.({ slot: slot.id, error: m.stopReason === 'error' ? errorClass(m.errorMessage) : m.stopReason === 'aborted' ? 'aborted' : 'ok', ms: Date.now() - started }),
      );
      return s;
    },
  };
}

/** A coarse class for an error message; the fallback chain refines this. */
export function errorClass(message: string | undefined): string {
  const status = /^(\d{3})\b/.exec(message ?? '')?.[1];
  if (status === '429') return 'rate_limit';
  if (status === '529') return 'overloaded';
  if (status === '401' || status === '403') return 'auth';
  if (status && status.startsWith('5')) return 'server';
  if (status && status.startsWith('4')) return 'bad_request';
  if (/timed? ?out/i.test(message ?? '')) return 'timeout';
  return 'network';
}
