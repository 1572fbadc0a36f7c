import type { ResponseFormat, TurnOverrides } from '../../kernel/envelope.js';
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
export function checkRequestFields(b: Record<string, unknown>, opts: { jsonModes: boolean }): TurnOverrides {
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
      case 'response_format': {
        const format = checkResponseFormat(value, field, opts.jsonModes, true);
        if (format) overrides.responseFormat = format;
        continue;
      }
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

const JSON_MODES_WHY =
  "this gateway's provider chain has a slot that takes no JSON modes (only the OpenAI APIs do, and a slot's jsonModes may turn them off), so the answer could not be held to JSON";

/**
 * A response format: `{type: "text"}` is what the gateway answers anyway (undefined); JSON mode and
 * a JSON schema are passed to the model when every provider slot takes them (`jsonModes`), else
 * refused by name. `schemaAt` is where the schema's fields are: chat completions nests them in
 * `json_schema`, the Responses API has them beside `type`.
 */
export function checkResponseFormat(value: unknown, field: string, jsonModes: boolean, nested: boolean): ResponseFormat | undefined {
  const type = value && typeof value === 'object' && !Array.isArray(value) ? (value as { type?: unknown }).type : undefined;
  if (type === 'text') return undefined;
  if (type !== 'json_object' && type !== 'json_schema')
    throw new RequestError(
      400,
      `Invalid '${field}': expected an object with 'type': 'text', 'json_object' or 'json_schema'.`,
      `${field}.type`,
      'invalid_value',
    );
  if (!jsonModes) throw new RequestError(400, `'${field}' of type '${type}' is not supported: ${JSON_MODES_WHY}`, field, 'unsupported_parameter');
  if (type === 'json_object') return { type };
  const at = nested ? `${field}.json_schema` : field;
  const spec = (nested ? (value as { json_schema?: unknown }).json_schema : value) as Record<string, unknown> | undefined;
  if (!spec || typeof spec !== 'object' || Array.isArray(spec)) throw new RequestError(400, `'${at}' must be an object`, at, 'invalid_type');
  if (typeof spec.name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(spec.name))
    throw new RequestError(400, `'${at}.name' must be 1-64 letters, digits, _ or -`, `${at}.name`, 'invalid_value');
  if (!spec.schema || typeof spec.schema !== 'object' || Array.isArray(spec.schema))
    throw new RequestError(400, `'${at}.schema' must be a JSON schema object`, `${at}.schema`, 'invalid_type');
  if (spec.strict !== undefined && spec.strict !== null && typeof spec.strict !== 'boolean')
    throw new RequestError(400, `'${at}.strict' must be a boolean`, `${at}.strict`, 'invalid_type');
  if (spec.description !== undefined && spec.description !== null && typeof spec.description !== 'string')
    throw new RequestError(400, `'${at}.description' must be a string`, `${at}.description`, 'invalid_type');
  return {
    type,
    name: spec.name,
    schema: spec.schema as Record<string, unknown>,
    ...(typeof spec.strict === 'boolean' ? { strict: spec.strict } : {}),
    ...(typeof spec.description === 'string' ? { description: spec.description } : {}),
  };
}
