import type { Model, OpenAICompletionsCompat } from '@mariozechner/pi-ai';

/** pi-ai's compat settings with every field resolved (its own type is not exported). */
export type ResolvedCompat = Omit<Required<OpenAICompletionsCompat>, 'cacheControlFormat'> & {
  cacheControlFormat?: OpenAICompletionsCompat['cacheControlFormat'];
};

/**
 * The compat flags pi-ai 0.73.1 derives from the provider and base URL
 * (providers/openai-completions.js detectCompat + getCompat), so the lean
 * transport builds the same request body as the SDK path.
 */
export function resolveCompat(model: Model<'openai-completions'>): ResolvedCompat {
  const { provider, baseUrl } = model;
  const isZai = provider === 'zai' || baseUrl.includes('api.z.ai');
  const isMoonshot = provider === 'moonshotai' || provider === 'moonshotai-cn' || baseUrl.includes('api.moonshot.');
  const isCfWorkers = provider === 'cloudflare-workers-ai' || baseUrl.includes('api.cloudflare.com');
  const isCfGateway = provider === 'cloudflare-ai-gateway' || baseUrl.includes('gateway.ai.cloudflare.com');
  const isNonStandard =
    provider === 'cerebras' ||
    baseUrl.includes('cerebras.ai') ||
    provider === 'xai' ||
    baseUrl.includes('api.x.ai') ||
    baseUrl.includes('chutes.ai') ||
    baseUrl.includes('deepseek.com') ||
    isZai ||
    isMoonshot ||
    provider === 'opencode' ||
    baseUrl.includes('opencode.ai') ||
    isCfWorkers ||
    isCfGateway;
  const isGrok = provider === 'xai' || baseUrl.includes('api.x.ai');
  const isDeepSeek = provider === 'deepseek' || baseUrl.includes('deepseek.com');
  const isOpenRouter = provider === 'openrouter' || baseUrl.includes('openrouter.ai');
  const detected: ResolvedCompat = {
    supportsStore: !isNonStandard,
    supportsDeveloperRole: !isNonStandard,
    supportsReasoningEffort: !isGrok && !isZai && !isMoonshot && !isCfGateway,
    supportsUsageInStreaming: true,
    maxTokensField: baseUrl.includes('chutes.ai') || isMoonshot || isCfGateway ? 'max_tokens' : 'max_completion_tokens',
    requiresToolResultName: false,
    requiresAssistantAfterToolResult: false,
    requiresThinkingAsText: false,
    requiresReasoningContentOnAssistantMessages: isDeepSeek,
    thinkingFormat: isDeepSeek ? 'deepseek' : isZai ? 'zai' : isOpenRouter ? 'openrouter' : 'openai',
    openRouterRouting: {},
    vercelGatewayRouting: {},
    zaiToolStream: false,
    supportsStrictMode: !isMoonshot && !isCfGateway,
    ...(provider === 'openrouter' && model.id.startsWith('anthropic/') ? { cacheControlFormat: 'anthropic' as const } : {}),
    sendSessionAffinityHeaders: false,
    supportsLongCacheRetention: !(isCfWorkers || isCfGateway),
  };
  const c = model.compat;
  if (!c) return detected;
  const merged = { ...detected };
  for (const [k, v] of Object.entries(c)) if (v !== undefined) (merged as Record<string, unknown>)[k] = v;
  return merged;
}

/**
 * Whether the lean transport builds this model's request exactly as pi-ai
 * would. It covers the OpenAI wire format as OpenAI, Groq, Ollama, vLLM,
 * llama.cpp and the like speak it; the vendor extras it leaves to the SDK path:
 * GitHub Copilot and Cloudflare headers and URLs, Anthropic-style cache
 * markers, thinking switches other than reasoning_effort, provider routing
 * (OpenRouter, Vercel), z.ai tool streaming, session-affinity headers.
 */
export function leanCovers(model: Model<'openai-completions'>, compat: ResolvedCompat): boolean {
  const p = model.provider;
  if (p === 'github-copilot' || p.startsWith('cloudflare-') || model.baseUrl.includes('cloudflare.com')) return false;
  if (model.baseUrl.includes('openrouter.ai') || model.baseUrl.includes('ai-gateway.vercel.sh')) return false;
  if (compat.cacheControlFormat || compat.zaiToolStream || compat.sendSessionAffinityHeaders) return false;
  return !model.reasoning || compat.thinkingFormat === 'openai';
}
