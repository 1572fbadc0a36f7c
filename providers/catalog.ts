import { getModel, type Api, type Model } from '@mariozechner/pi-ai';
import { ConfigError, type Config, type SlotConfig } from '../src/config.js';
import { providerFromConfig } from './from-env.js';
import type { ProviderSlot } from './slot.js';

/** pi-ai provider whose catalog an API's models come from, when the slot names none. */
const DEFAULT_PROVIDER: Partial<Record<SlotConfig['api'], string>> = {
  'anthropic-messages': 'anthropic',
  'openai-completions': 'openai',
  'openai-responses': 'openai',
  'google-generative-ai': 'google',
  'mistral-conversations': 'mistral',
};

/**
 * The chain's slots from configuration: `providers` in order, or the single
 * provider from the environment. Throws ConfigError naming the key when a slot
 * cannot work (its key variable is unset, a model pi-ai does not know has no
 * baseUrl, two slots share an id).
 */
export function buildSlots(cfg: Config, env: Record<string, string | undefined> = process.env): { slots: ProviderSlot[]; reason?: string } {
  if (!cfg.providers) {
    const { slot, reason } = providerFromConfig(cfg.provider);
    return slot ? { slots: [slot] } : { slots: [], ...(reason ? { reason } : {}) };
  }
  const seen = new Set<string>();
  const slots = cfg.providers.map((s, i) => {
    const at = `providers.${i}`;
    if (seen.has(s.id)) throw new ConfigError(`invalid configuration at "${at}.id": slot id "${s.id}" is used twice`);
    seen.add(s.id);
    let apiKey: string | undefined;
    if (s.apiKeyEnv) {
      apiKey = env[s.apiKeyEnv];
      if (!apiKey) throw new ConfigError(`invalid configuration at "${at}.apiKeyEnv": environment variable ${s.apiKeyEnv} is not set`);
    }
    return { id: s.id, model: slotModel(s, at), ...(s.apiKeyEnv ? { apiKeyEnv: s.apiKeyEnv } : {}), apiKey: apiKey ?? 'none' } satisfies ProviderSlot;
  });
  return { slots };
}

function slotModel(s: SlotConfig, at: string): Model<Api> {
  const provider = s.provider ?? DEFAULT_PROVIDER[s.api];
  const known = provider ? lookup(provider, s.model) : undefined;
  const overrides = {
    ...(s.baseUrl ? { baseUrl: s.baseUrl.replace(/\/+$/, '') } : {}),
    ...(s.contextWindow ? { contextWindow: s.contextWindow } : {}),
    ...(s.maxTokens ? { maxTokens: s.maxTokens } : {}),
    ...(s.reasoning !== undefined ? { reasoning: s.reasoning } : {}),
    ...(s.compat ? { compat: s.compat } : {}),
  };
  if (known && known.api === s.api) return { ...known, ...overrides } as Model<Api>;
  if (!s.baseUrl) throw new ConfigError(`invalid configuration at "${at}.baseUrl": pi-ai does not know model "${s.model}" for ${s.api}, so its baseUrl is required`);
  return {
    id: s.model,
    name: s.model,
    api: s.api,
    provider: provider ?? 'custom',
    baseUrl: s.baseUrl.replace(/\/+$/, ''),
    reasoning: s.reasoning ?? false,
    input: ['text'],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: s.contextWindow ?? 128_000,
    maxTokens: s.maxTokens ?? 4096,
    ...(s.compat ? { compat: s.compat } : s.api === 'openai-completions' ? { compat: { supportsDeveloperRole: false, supportsStore: false, maxTokensField: 'max_tokens' } } : {}),
  } as Model<Api>;
}

function lookup(provider: string, id: string): Model<Api> | undefined {
  try {
    return (getModel as (p: string, m: string) => Model<Api> | undefined)(provider, id);
  } catch {
    return undefined;
  }
}
