import {
  type Api,
  type AssistantMessage,
  type AssistantMessageEvent,
  type AssistantMessageEventStream,
  type Context,
  createAssistantMessageEventStream,
  type Model,
  type SimpleStreamOptions,
} from '@mariozechner/pi-ai';
import type { CooldownState, CooldownStore } from '../kernel/cooldowns.js';
import { linkedSignal } from '../kernel/linked-signal.js';
import { type LogSink, logFailure } from '../kernel/log.js';
import type { FallbackSettings } from './config.js';
import { ADVANCES, classifyError, type ErrorClass } from './errors.js';
import { observeHttp } from './http-observer.js';
import type { ProviderSlot } from './slot.js';
import { type StreamFn, streamFor } from './transport.js';

/** One model call attempt, for the turn's ledger. */
export interface Attempt {
  slot: string;
  /** Error class, or 'ok'. */
  error: ErrorClass | 'ok';
  ms: number;
}

/** What the chain tells the turn while a model call runs. */
export interface ChainHooks {
  /** The partial reply shown so far must be withdrawn: another slot answers from the same context. */
  onReset?(reason: string): void;
  onAttempt?(a: Attempt): void;
  /** Something to tell the user that is not part of the answer (providers busy). */
  onNotice?(text: string): void;
  /** The context is too large for the slot: return a smaller one (compaction) to retry with, or null. */
  onContextOverflow?(context: Context): Promise<Context | null>;
  /**
   * Before each attempt: the request as it may go to this slot's model (within its window,
   * with the maxTokens to send), or null when it cannot fit: then only slots with a larger window are tried.
   */
  fitToWindow?(context: Context, model: Model<Api>, maxTokens: number | undefined): { context: Context; maxTokens: number } | null;
}

export interface SlotHealth {
  id: string;
  model: string;
  api: string;
  cooling: boolean;
  until: number;
  strikes: number;
  reason?: string;
}

/**
 * The provider seam. The agent loop calls stream() for every model call; the
 * chain decides which slot answers.
 */
export interface ProviderChain {
  readonly slots: readonly ProviderSlot[];
  /** The model the loop reports against (the first slot's). */
  readonly primary: Model<Api>;
  stream(context: Context, options: SimpleStreamOptions, hooks: ChainHooks): AssistantMessageEventStream;
  health(): Promise<SlotHealth[]>;
}

export type { FallbackSettings };

/**
 * Ordered slots with fallback. Only retryable failures (rate limit, overloaded,
 * server, timeout, network; auth after a long cooldown) move on to the next
 * slot; bad requests and aborts end the call. A failing slot cools down
 * (escalating, or as long as Retry-After says), shared through the cooldown
 * store; cooling slots are tried last, not never. When every slot fails, rounds
 * repeat with backoff until busyRetryMs, telling the user once after
 * busyNoticeMs. A slot that fails after streaming text makes the chain ask the
 * channel to withdraw it (onReset) before the next slot answers from the same
 * context; tool calls only run on a completed message, so a retry never runs one twice.
 */
export class FallbackChain implements ProviderChain {
  readonly primary: Model<Api>;

  constructor(
    readonly slots: readonly ProviderSlot[],
    private readonly cooldowns: CooldownStore,
    private readonly settings: FallbackSettings,
    /** By default the transport the settings name (lean where it covers the API, else pi-ai's SDK path). */
    private readonly streamFn: StreamFn = streamFor(settings.transport ?? 'lean'),
    /** Where a cooldown store that cannot be written is reported (the call goes on). */
    private readonly log?: LogSink,
  ) {
    if (slots.length === 0) throw new Error('a provider chain needs at least one slot');
    this.primary = slots[0]!.model;
  }

  stream(context: Context, options: SimpleStreamOptions, hooks: ChainHooks): AssistantMessageEventStream {
    const out = createAssistantMessageEventStream();
    this.run(context, options, hooks, out).catch((err: unknown) => {
      out.push({ type: 'error', reason: 'error', error: failure(this.primary, `provider chain failed: ${(err as Error).message}`) });
    });
    return out;
  }

  async health(): Promise<SlotHealth[]> {
    const states = await this.cooldowns.get(this.slots.map((s) => s.id));
    const now = Date.now();
    return this.slots.map((s) => {
      const st = states.get(s.id) ?? { until: 0, strikes: 0 };
      return {
        id: s.id,
        model: s.model.id,
        api: s.model.api,
        cooling: st.until > now,
        until: st.until,
        strikes: st.strikes,
        ...(st.reason ? { reason: st.reason } : {}),
      };
    });
  }

  /** Available slots in configured order, then cooling ones, soonest back first. */
  private async order(minWindow: number): Promise<Array<{ slot: ProviderSlot; state: CooldownState }>> {
    const candidates = this.slots.filter((s) => s.model.contextWindow > minWindow);
    const states = await this.cooldowns.get(candidates.map((s) => s.id));
    const now = Date.now();
    const withState = candidates.map((slot) => ({ slot, state: states.get(slot.id) ?? { until: 0, strikes: 0 } }));
    const ready = withState.filter((x) => x.state.until <= now);
    const cooling = withState.filter((x) => x.state.until > now).sort((a, b) => a.state.until - b.state.until);
    return [...ready, ...cooling];
  }

  private cooldownMs(cls: ErrorClass, retryAfterMs: number | undefined): (strikes: number) => number {
    const { cooldownsMs, authCooldownMs } = this.settings;
    if (cls === 'auth') return () => authCooldownMs;
    if (retryAfterMs !== undefined) return () => retryAfterMs;
    return (strikes) => cooldownsMs[Math.min(strikes, cooldownsMs.length) - 1]!;
  }

  private async run(context: Context, options: SimpleStreamOptions, hooks: ChainHooks, out: AssistantMessageEventStream): Promise<void> {
    const started = Date.now();
    const signal = options.signal;
    const st = { forwardedStart: false };
    const failures: string[] = [];
    let last: AssistantMessage | undefined;
    let minWindow = 0;
    let compacted = false;
    let noticed = false;

    rounds: for (let round = 0; ; round++) {
      const order = await this.order(minWindow);
      for (let i = 0; i < order.length; i++) {
        const { slot, state } = order[i]!;
        if (signal?.aborted) return void out.push({ type: 'error', reason: 'aborted', error: failure(slot.model, 'Request was aborted.', 'aborted') });
        const fitted = hooks.fitToWindow ? hooks.fitToWindow(context, slot.model, options.maxTokens) : { context, maxTokens: options.maxTokens };
        if (!fitted) {
          // Not sent: it would not fit this slot's window, nor any slot's with the same or a smaller one.
          // Reported as an attempt (0 ms) so the turn's ledger and its error name the slot and why.
          hooks.onAttempt?.({ slot: slot.id, error: 'context_overflow', ms: 0 });
          failures.push(`${slot.id}: context too large for its window`);
          minWindow = Math.max(minWindow, slot.model.contextWindow);
          continue rounds;
        }
        const fittedOptions = fitted.maxTokens ? { ...options, maxTokens: fitted.maxTokens } : options;
        // Anthropic takes a temperature of 0-1 (OpenAI's API, and so the HTTP API's, 0-2): above 1 is sent as 1, not refused by the slot.
        const sendOptions =
          slot.model.api === 'anthropic-messages' && (fittedOptions.temperature ?? 0) > 1 ? { ...fittedOptions, temperature: 1 } : fittedOptions;
        const t0 = Date.now();
        const r = await this.attempt(slot, fitted.context, sendOptions, out, st);
        hooks.onAttempt?.({ slot: slot.id, error: r.cls ?? 'ok', ms: Date.now() - t0 });
        if (!r.cls) {
          if (state.strikes > 0)
            await this.cooldowns.clear(slot.id).catch(logFailure(this.log, 'warn', 'could not clear the slot cooldown', { slot: slot.id }));
          out.push({ type: 'done', reason: doneReason(r.message), message: r.message });
          return;
        }
        last = r.message;
        failures.push(`${slot.id}: ${r.cls}`);
        if (r.cls === 'context_overflow') {
          const smaller = compacted ? null : await hooks.onContextOverflow?.(context);
          compacted = true;
          if (smaller) {
            context = smaller;
            i--; // the same slot again, with the compacted context
            continue;
          }
          // Then only slots with a larger window than this one.
          minWindow = Math.max(minWindow, slot.model.contextWindow);
          if (r.forwardedContent) hooks.onReset?.(`${slot.id}: context overflow`);
          continue rounds;
        }
        if (!ADVANCES[r.cls]) {
          out.push({ type: 'error', reason: r.cls === 'aborted' ? 'aborted' : 'error', error: r.message });
          return;
        }
        await this.cooldowns
          .fail(slot.id, this.cooldownMs(r.cls, r.retryAfterMs), r.cls)
          .catch(logFailure(this.log, 'warn', 'could not record the slot cooldown', { slot: slot.id, error: r.cls }));
        if (r.forwardedContent) hooks.onReset?.(`${slot.id} failed mid-answer (${r.cls})`);
      }

      // Every slot failed this round.
      const elapsed = Date.now() - started;
      const left = this.settings.busyRetryMs - elapsed;
      if (order.length === 0 || left <= 0 || signal?.aborted) {
        const why = order.length === 0 ? 'no slot has a large enough context window' : failures.slice(-this.slots.length).join(', ');
        const msg = failure(
          last ? { api: last.api, provider: last.provider, id: last.model } : this.primary,
          `All model providers failed (${why})${last?.errorMessage ? `: ${last.errorMessage}` : ''}`,
        );
        out.push({ type: 'error', reason: 'error', error: msg });
        return;
      }
      if (!noticed && elapsed >= this.settings.busyNoticeMs) {
        noticed = true;
        hooks.onNotice?.('The model providers are busy right now; still trying…');
      }
      const states = await this.cooldowns.get(this.slots.map((s) => s.id));
      const soonest = Math.min(...[...states.values()].map((s) => s.until)) - Date.now();
      const wait = Math.max(50, Math.min(500 * 2 ** round, 5_000, left, soonest > 0 ? soonest : Infinity));
      await sleep(wait, signal);
      if (!noticed && Date.now() - started >= this.settings.busyNoticeMs) {
        noticed = true;
        hooks.onNotice?.('The model providers are busy right now; still trying…');
      }
    }
  }

  /**
   * One slot, one request, under the connect / first-token / idle / total
   * timeouts. Content events are forwarded as they come; only the first 'start'
   * of the whole call is (the agent loop opens one message per call), and the
   * terminal event is left to run().
   */
  private async attempt(slot: ProviderSlot, context: Context, options: SimpleStreamOptions, out: AssistantMessageEventStream, st: { forwardedStart: boolean }) {
    const t = this.settings.timeouts;
    const link = linkedSignal(options.signal);
    const signal = link.signal;
    let timedOut: string | undefined;
    const arm = (ms: number, what: string) =>
      setTimeout(() => {
        timedOut = `${what} timeout (${ms} ms)`;
        link.abort();
      }, ms);
    let phase = arm(t.connectMs, 'connect');
    const total = arm(t.totalMs, 'total');
    let call!: ReturnType<typeof observeHttp<ReturnType<StreamFn>>>;
    let forwardedContent = false;
    try {
      // Inside the try: a stream function that throws still clears the timers and the link.
      call = observeHttp((marker) =>
        this.streamFn(slot.model, context, {
          ...options,
          headers: { ...options.headers, ...marker },
          signal,
          apiKey: slot.apiKey,
          maxRetries: 0,
          timeoutMs: t.totalMs,
        }),
      );
      for await (const ev of call.result) {
        clearTimeout(phase);
        if (ev.type === 'done' || ev.type === 'error') break;
        if (ev.type === 'start') {
          phase = arm(t.firstTokenMs, 'first token');
          if (!st.forwardedStart) {
            st.forwardedStart = true;
            out.push(ev);
          }
          continue;
        }
        phase = arm(t.idleMs, 'idle');
        if (!st.forwardedStart) {
          st.forwardedStart = true;
          out.push({ type: 'start', partial: ev.partial });
        }
        out.push(ev as AssistantMessageEvent);
        forwardedContent = true;
      }
    } finally {
      clearTimeout(phase);
      clearTimeout(total);
      link.dispose();
    }
    const { result: upstream, observation, release } = call;
    const message = await upstream.result();
    release();
    if (message.stopReason !== 'error' && message.stopReason !== 'aborted') return { message, forwardedContent } as const;
    let cls: ErrorClass;
    if (timedOut) {
      cls = 'timeout';
      message.stopReason = 'error';
      message.errorMessage = `${timedOut} from ${slot.id}`;
    } else if (message.stopReason === 'aborted') cls = options.signal?.aborted ? 'aborted' : 'timeout';
    else cls = classifyError(message, observation);
    return { message, cls, forwardedContent, retryAfterMs: observation.retryAfterMs } as const;
  }
}

function doneReason(m: AssistantMessage): 'stop' | 'length' | 'toolUse' {
  return m.stopReason === 'length' ? 'length' : m.stopReason === 'toolUse' ? 'toolUse' : 'stop';
}

function failure(model: Pick<Model<Api>, 'api' | 'provider' | 'id'>, errorMessage: string, stopReason: 'error' | 'aborted' = 'error'): AssistantMessage {
  return {
    role: 'assistant',
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
    stopReason,
    errorMessage,
    timestamp: Date.now(),
  };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const onAbort = () => (clearTimeout(t), resolve());
    const t = setTimeout(() => (signal?.removeEventListener('abort', onAbort), resolve()), ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
