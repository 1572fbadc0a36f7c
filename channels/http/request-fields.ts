import type { TurnOverrides } from '../../kernel/envelope.js';
import { RequestError } from '../../src/channel/index.js';

/**
 * The top-level fields of a chat-completions request besides model, messages, stream and user
 * (request.ts checks those), each honoured, accepted as harmless, or refused by name with a 400:
 * none is silently ignored. The README's "Request fields" table says the same.
 * A field set to null counts as absent, as OpenAI's API has it.
 */

/** Accepted and changing nothing of the answer: metadata for the client's own bookkeeping. */
const HARMLESS = new Set(['stream_options', 'metadata', 'store']);

export const CLIENT_TOOLS_WHY = "the agent's tools are configured on the gateway; a request cannot bring its own tools or choose among them";

/** Refused whatever their value: the agent's tools are configured on the gateway. */
const CLIENT_TOOLS = new Set(['tools', 'tool_choice', 'functions', 'function_call', 'parallel_tool_calls']);

/** Known OpenAI fields the gateway cannot honour (pi-ai passes none of them on); accepted only at the value that changes nothing. */
const NOT_HONOURED: Record<string, unknown> = {
  top_p: 1,
  presence_penalty: 0,
  frequency_penalty: 0,
  logprobs: false,
  seed: undefined,
  stop: undefined,
  logit_bias: undefined,
  top_logprobs: undefined,
  modalities: undefined,
  audio: undefined,
  prediction: undefined,
  reasoning_effort: undefined,
  service_tier: undefined,
  web_search_options: undefined,
  verbosity: undefined,
  prompt_cache_key: undefined,
  safety_identifier: undefined,
};

/** What request.ts checks itself. */
const PARSED = new Set(['model', 'messages', 'stream', 'user']);

export const unsupported = (field: string, why: string) => new RequestError(400, `'${field}' is not supported: ${why}`, field, 'unsupported_parameter');

/** Checks every field of the body; returns what the turn is to use of them. */
export function checkRequestFields(b: Record<string, unknown>): TurnOverrides {
  const overrides: TurnOverrides = {};
  let maxTokens: number | undefined;
  for (const [field, value] of Object.entries(b)) {
    if (PARSED.has(field) || value === null || value === undefined) continue;
    switch (field) {
      case 'temperature':
        overrides.temperature = numberIn(field, value, 0, 2, false);
        continue;
      case 'max_tokens':
      case 'max_completion_tokens': {
        // Both given: the smaller; the turn caps it at the agent's maxTokens.
        const n = numberIn(field, value, 1, Number.MAX_SAFE_INTEGER, true);
        maxTokens = maxTokens === undefined ? n : Math.min(maxTokens, n);
        continue;
      }
      case 'n':
        if (numberIn(field, value, 1, Number.MAX_SAFE_INTEGER, true) > 1) throw unsupported('n', 'the gateway answers with one choice (n: 1)');
        continue;
      case 'response_format':
        checkResponseFormat(value);
        continue;
    }
    if (HARMLESS.has(field)) {
      if (field === 'store' ? typeof value !== 'boolean' : typeof value !== 'object' || Array.isArray(value))
        throw new RequestError(400, `'${field}' must be ${field === 'store' ? 'a boolean' : 'an object'}`, field, 'invalid_type');
      continue;
    }
    if (CLIENT_TOOLS.has(field)) throw unsupported(field, CLIENT_TOOLS_WHY);
    if (Object.hasOwn(NOT_HONOURED, field)) {
      const noOp = NOT_HONOURED[field];
      if (noOp !== undefined && value === noOp) continue;
      throw unsupported(
        field,
        noOp === undefined
          ? 'the gateway cannot pass it to the model'
          : `the gateway cannot pass it to the model (only ${JSON.stringify(noOp)}, the default, is accepted)`,
      );
    }
    throw new RequestError(400, `Unrecognized request argument supplied: ${field}`, field, 'unknown_parameter');
  }
  if (maxTokens !== undefined) overrides.maxTokens = maxTokens;
  return overrides;
}

export function numberIn(field: string, value: unknown, min: number, max: number, integer: boolean): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || (integer && !Number.isInteger(value)))
    throw new RequestError(400, `Invalid '${field}': expected ${integer ? 'an integer' : 'a number'}.`, field, 'invalid_type');
  if (value < min || value > max)
    throw new RequestError(
      400,
      `Invalid '${field}': expected a value ${value < min ? `>= ${min}` : `<= ${max}`}, but got ${value} instead.`,
      field,
      'invalid_value',
    );
  return value;
}

/**
 * `{type: "text"}` is what the gateway answers anyway. JSON modes are refused: pi-ai has no such option,
 * a fallback slot may be a provider without one, and the gateway may add notices or approval requests
 * to an answer, so JSON could not be promised.
 */
function checkResponseFormat(value: unknown): void {
  const type = value && typeof value === 'object' && !Array.isArray(value) ? (value as { type?: unknown }).type : undefined;
  if (type === 'text') return;
  if (type === 'json_object' || type === 'json_schema')
    throw new RequestError(
      400,
      `'response_format' of type '${type}' is not supported: the gateway answers in text (its answers may carry notices, and a fallback model may not support JSON modes)`,
      'response_format',
      'unsupported_parameter',
    );
  throw new RequestError(400, "Invalid 'response_format': expected an object with 'type': 'text'.", 'response_format.type', 'invalid_value');
}
