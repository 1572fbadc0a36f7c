import type { TurnEvent } from '../../kernel/turn-events.js';

type Done = Extract<TurnEvent, { type: 'done' }>;

/** Error classes that say "busy, try later" (503); any other failure of every slot is a bad gateway (502). */
const BUSY = new Set(['rate_limit', 'overloaded']);

/**
 * A turn that failed on every provider (finishReason 'error'), as the HTTP API answers it: an
 * OpenAI-style error (type api_error, code provider_error) whose message names each slot's error
 * class, never the upstream's own text; the `switchboard` object carries the attempts (slot, error class, ms).
 */
export function providerError(e: Done, switchboard: Record<string, unknown>) {
  const attempts = (e.provider?.attempts ?? []).filter((a) => a.error !== 'ok');
  const status = attempts.length && attempts.every((a) => BUSY.has(a.error)) ? 503 : 502;
  // A slot retried while busy is named once per error class.
  const why = [...new Set(attempts.map((a) => `${a.slot}: ${a.error}`))].join(', ');
  return {
    status,
    body: {
      error: {
        message: `Every model provider failed${why ? ` (${why})` : ''}; the message is kept in its conversation. Try again in a moment.`,
        type: 'api_error',
        param: null,
        code: 'provider_error',
      },
      switchboard,
    },
  };
}
