import type { Api, Model } from '@mariozechner/pi-ai';
import type { ResponseFormat } from '../kernel/envelope.js';
import type { ProvidersConfig, SlotConfig } from './config.js';

/** The APIs whose requests take OpenAI's JSON modes (chat completions' response_format, responses' text.format). */
const JSON_MODE_APIS = new Set<string>(['openai-completions', 'openai-responses', 'azure-openai-responses']);

/** Whether a slot takes JSON modes: its `jsonModes`, by default whether its API is one of OpenAI's. */
export function slotTakesJsonModes(s: Pick<SlotConfig, 'api' | 'jsonModes'>): boolean {
  return JSON_MODE_APIS.has(s.api) && s.jsonModes !== false;
}

/**
 * Whether every slot of the chain takes JSON modes: only then may a request ask for one (a fallback
 * slot that cannot would answer in free text). The environment's one provider: OPENAI_BASE_URL and
 * OPENAI_API_KEY are OpenAI's chat completions, ANTHROPIC_API_KEY is not.
 */
export function chainTakesJsonModes(cfg: ProvidersConfig): boolean {
  if (cfg.providers) return cfg.providers.length > 0 && cfg.providers.every(slotTakesJsonModes);
  const p = cfg.provider;
  const api = p.openaiBaseUrl ? 'openai-completions' : p.anthropicApiKey ? 'anthropic-messages' : p.openaiApiKey ? 'openai-completions' : undefined;
  return api !== undefined && slotTakesJsonModes({ api: api as SlotConfig['api'], jsonModes: p.jsonModes });
}

/** pi-ai's onPayload: the format added to the request as the slot's API names it. */
export function responseFormatPayload(format: ResponseFormat) {
  return (payload: unknown, model: Model<Api>): unknown => {
    if (!payload || typeof payload !== 'object') return undefined;
    if (model.api === 'openai-completions') {
      const response_format =
        format.type === 'json_object'
          ? { type: 'json_object' }
          : {
              type: 'json_schema',
              json_schema: {
                name: format.name,
                schema: format.schema,
                ...(format.strict !== undefined ? { strict: format.strict } : {}),
                ...(format.description ? { description: format.description } : {}),
              },
            };
      return { ...payload, response_format };
    }
    if (model.api === 'openai-responses' || model.api === 'azure-openai-responses') {
      const text = (payload as { text?: Record<string, unknown> }).text ?? {};
      return { ...payload, text: { ...text, format } };
    }
    return undefined;
  };
}
