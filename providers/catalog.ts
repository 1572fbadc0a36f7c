import type { Api, Model } from '@mariozechner/pi-ai';
import type { ConfigProblem } from '../kernel/config-slice.js';
import type { ProvidersConfig, SlotConfig } from './config.js';
import { providerFromConfig } from './from-env.js';
import { catalogModel } from './model-catalog.js';
import { slotTakesJsonModes } from './response-format.js';
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
 * provider from the environment. A slot that cannot work (its key variable is
 * unset, a model pi-ai does not know has no baseUrl, two slots share an id) is a
 * problem naming its key; every such problem is returned, the slots that work with them.
 */
export async function slotsFromConfig(
  cfg: ProvidersConfig,
  env: Record<string, string | undefined> = process.env,
): Promise<{ slots: ProviderSlot[]; reason?: string; problems: ConfigProblem[] }> {
  if (!cfg.providers) {
    const { slot, reason } = await providerFromConfig(cfg.provider);
    return slot ? { slots: [slot], problems: [] } : { slots: [], ...(reason ? { reason } : {}), problems: [] };
  }
  const seen = new Set<string>();
  const problems: ConfigProblem[] = [];
  const slots: ProviderSlot[] = [];
  for (const [i, s] of cfg.providers.entries()) {
    const at = `providers.${i}`;
    const before = problems.length;
    if (seen.has(s.id)) problems.push({ path: `${at}.id`, message: `slot id "${s.id}" is used twice` });
    if (s.jsonModes && !slotTakesJsonModes(s)) problems.push({ path: `${at}.jsonModes`, message: `${s.api} takes no JSON modes (only the OpenAI APIs do)` });
    seen.add(s.id);
    let apiKey: string | undefined;
    if (s.apiKeyEnv) {
      apiKey = env[s.apiKeyEnv];
      if (!apiKey) problems.push({ path: `${at}.apiKeyEnv`, message: `environment variable ${s.apiKeyEnv} is not set` });
    }
    const model = await slotModel(s, at, problems);
    if (model && problems.length === before) slots.push({ id: s.id, model, ...(s.apiKeyEnv ? { apiKeyEnv: s.apiKeyEnv } : {}), apiKey: apiKey ?? 'none' });
  }
  return { slots, problems };
}

async function slotModel(s: SlotConfig, at: string, problems: ConfigProblem[]): Promise<Model<Api> | undefined> {
  const provider = s.provider ?? DEFAULT_PROVIDER[s.api];
  const known = provider ? await catalogModel(provider, s.model) : undefined;
  const overrides = {
    ...(s.baseUrl ? { baseUrl: s.baseUrl.replace(/\/+$/, '') } : {}),
    ...(s.contextWindow ? { contextWindow: s.contextWindow } : {}),
    ...(s.maxTokens ? { maxTokens: s.maxTokens } : {}),
    ...(s.reasoning !== undefined ? { reasoning: s.reasoning } : {}),
    ...(s.input ? { input: s.input } : {}),
    ...(s.compat ? { compat: s.compat } : {}),
  };
  if (known && known.api === s.api) return { ...known, ...overrides } as Model<Api>;
  if (!s.baseUrl) {
    problems.push({ path: `${at}.baseUrl`, message: `pi-ai does not know model "${s.model}" for ${s.api}, so its baseUrl is required` });
    return undefined;
  }
  return {
    id: s.model,
    name: s.model,
    api: s.api,
    provider: provider ?? 'custom',
    baseUrl: s.baseUrl.replace(/\/+$/, ''),
    reasoning: s.reasoning ?? false,
    input: s.input ?? ['text'],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: s.contextWindow ?? 128_000,
    maxTokens: s.maxTokens ?? 4096,
    ...(s.compat
      ? { compat: s.compat }
      : s.api === 'openai-completions'
        ? { compat: { supportsDeveloperRole: false, supportsStore: false, maxTokensField: 'max_tokens' } }
        : {}),
  } as Model<Api>;
}
