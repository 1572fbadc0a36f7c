import type { Api, Model } from '@mariozechner/pi-ai';
import type { ProviderEnvConfig } from './config.js';
import { catalogModel } from './model-catalog.js';
import type { ProviderSlot, ProviderStatus } from './slot.js';

export const DEFAULT_ANTHROPIC_MODEL = 'claude-sonnet-4-5';
export const DEFAULT_OPENAI_MODEL = 'gpt-4.1-mini';

/**
 * The single provider configured by environment: OPENAI_BASE_URL (+ SWITCHBOARD_MODEL)
 * for any OpenAI-compatible server, else ANTHROPIC_API_KEY, else OPENAI_API_KEY.
 * Returns no slot, with a reason, when none is configured.
 */
export async function providerFromConfig(cfg: ProviderEnvConfig): Promise<{ slot?: ProviderSlot; reason?: string }> {
  if (cfg.openaiBaseUrl) {
    if (!cfg.model) return { reason: 'OPENAI_BASE_URL is set but SWITCHBOARD_MODEL (the model id on that server) is not' };
    const model: Model<'openai-completions'> = {
      id: cfg.model,
      name: cfg.model,
      api: 'openai-completions',
      provider: 'openai-compatible',
      baseUrl: cfg.openaiBaseUrl.replace(/\/+$/, ''),
      reasoning: false,
      input: cfg.input ?? ['text'],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      contextWindow: cfg.contextWindow ?? 32_768,
      maxTokens: cfg.maxTokens ?? 4096,
      // Local servers (Ollama, vLLM, llama.cpp) speak the plain chat-completions dialect.
      compat: { supportsDeveloperRole: false, supportsStore: false, maxTokensField: 'max_tokens' },
    };
    // Local servers often need no key; the SDK still wants a non-empty one.
    return { slot: { id: 'openai-compatible', model: model as Model<Api>, apiKeyEnv: 'OPENAI_API_KEY', apiKey: cfg.openaiApiKey || 'none' } };
  }
  if (cfg.anthropicApiKey) {
    const id = cfg.model ?? DEFAULT_ANTHROPIC_MODEL;
    const model = await knownModel('anthropic', id);
    if (!model) return { reason: `SWITCHBOARD_MODEL "${id}" is not an Anthropic model pi-ai knows` };
    return { slot: { id: 'anthropic', model: withOverrides(model, cfg), apiKeyEnv: 'ANTHROPIC_API_KEY', apiKey: cfg.anthropicApiKey } };
  }
  if (cfg.openaiApiKey) {
    const id = cfg.model ?? DEFAULT_OPENAI_MODEL;
    const model = await knownModel('openai', id);
    if (!model) return { reason: `SWITCHBOARD_MODEL "${id}" is not an OpenAI model pi-ai knows` };
    return { slot: { id: 'openai', model: withOverrides(model, cfg), apiKeyEnv: 'OPENAI_API_KEY', apiKey: cfg.openaiApiKey } };
  }
  return { reason: 'no model provider is configured: set ANTHROPIC_API_KEY, OPENAI_API_KEY, or OPENAI_BASE_URL with SWITCHBOARD_MODEL' };
}

function knownModel(provider: 'anthropic' | 'openai', id: string): Promise<Model<Api> | undefined> {
  return catalogModel(provider, id);
}

function withOverrides(m: Model<Api>, cfg: ProviderEnvConfig): Model<Api> {
  return {
    ...m,
    ...(cfg.input ? { input: cfg.input } : {}),
    ...(cfg.contextWindow ? { contextWindow: cfg.contextWindow } : {}),
    ...(cfg.maxTokens ? { maxTokens: cfg.maxTokens } : {}),
  };
}

export function providerStatus(slots: ProviderSlot[], reason?: string): ProviderStatus {
  return {
    configured: slots.length > 0,
    ...(reason ? { reason } : {}),
    slots: slots.map((s) => ({
      id: s.id,
      api: s.model.api,
      model: s.model.id,
      baseUrl: s.model.baseUrl,
      keyPresent: Boolean(s.apiKey),
      ...(s.apiKeyEnv ? { keyEnv: s.apiKeyEnv } : {}),
    })),
  };
}
