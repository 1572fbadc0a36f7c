/**
 * JSON modes: which chains take them (every slot on an OpenAI API, `jsonModes` not false), the
 * configuration problem of a slot claiming them on another API, and where the format goes in each
 * API's request payload.
 */
import type { Api, Model } from '@mariozechner/pi-ai';
import { describe, expect, it } from 'vitest';
import { slotsFromConfig } from '../providers/catalog.js';
import { chainTakesJsonModes, responseFormatPayload } from '../providers/response-format.js';

const model = (api: string) => ({ api }) as unknown as Model<Api>;

describe('JSON modes', () => {
  it('a chain takes them only when every slot does', () => {
    const slot = (id: string, api: string, jsonModes?: boolean) =>
      ({ id, api, model: 'm', baseUrl: 'http://127.0.0.1:1/v1', ...(jsonModes !== undefined ? { jsonModes } : {}) }) as never;
    expect(chainTakesJsonModes({ provider: {}, providers: [slot('a', 'openai-completions'), slot('b', 'openai-responses')] })).toBe(true);
    expect(chainTakesJsonModes({ provider: {}, providers: [slot('a', 'openai-completions'), slot('b', 'anthropic-messages')] })).toBe(false);
    expect(chainTakesJsonModes({ provider: {}, providers: [slot('a', 'openai-completions', false)] })).toBe(false);
    expect(chainTakesJsonModes({ provider: { openaiBaseUrl: 'http://127.0.0.1:1/v1', model: 'x' } })).toBe(true);
    expect(chainTakesJsonModes({ provider: { openaiBaseUrl: 'http://127.0.0.1:1/v1', model: 'x', jsonModes: false } })).toBe(false);
    expect(chainTakesJsonModes({ provider: { anthropicApiKey: 'k' } })).toBe(false);
    expect(chainTakesJsonModes({ provider: {} })).toBe(false);
  });

  it('a slot claiming JSON modes on an API without them is a problem naming its key', async () => {
    const { problems } = await slotsFromConfig(
      { provider: {}, providers: [{ id: 'c', api: 'anthropic-messages', model: 'claude-sonnet-4-5', jsonModes: true }] },
      {},
    );
    expect(problems).toContainEqual({ path: 'providers.0.jsonModes', message: 'anthropic-messages takes no JSON modes (only the OpenAI APIs do)' });
  });

  it('goes into response_format for chat completions and text.format for the Responses API', () => {
    const schema = { type: 'object' };
    const f = responseFormatPayload({ type: 'json_schema', name: 'n', schema, strict: true });
    expect(f({ model: 'x' }, model('openai-completions'))).toEqual({
      model: 'x',
      response_format: { type: 'json_schema', json_schema: { name: 'n', schema, strict: true } },
    });
    expect(f({ model: 'x', text: { verbosity: 'low' } }, model('openai-responses'))).toEqual({
      model: 'x',
      text: { verbosity: 'low', format: { type: 'json_schema', name: 'n', schema, strict: true } },
    });
    expect(f({ model: 'x' }, model('anthropic-messages'))).toBeUndefined();
    expect(responseFormatPayload({ type: 'json_object' })({}, model('openai-completions'))).toEqual({ response_format: { type: 'json_object' } });
  });
});
