import { type Api, type Model, streamSimple } from '@mariozechner/pi-ai';
import { leanHandles, streamLeanOpenAICompletions } from './lean/openai-completions.js';

/** How model calls reach the provider: the lean transport where it covers the API, else pi-ai's SDK path. */
export type ProviderTransport = 'lean' | 'sdk';

export type StreamFn = typeof streamSimple;

/**
 * The stream function a provider chain calls. Chosen per chain (not with
 * pi-ai's registerApiProvider, which replaces an API for the whole process):
 * the configuration decides it per gateway, the SDK path stays one setting
 * away, and a test or a bench can drive both in one process. With 'lean',
 * `openai-completions` models the lean transport covers take it; every other
 * API and model goes through pi-ai's streamSimple and its SDK.
 */
export function streamFor(transport: ProviderTransport): StreamFn {
  if (transport === 'sdk') return streamSimple;
  return (model, context, options) =>
    model.api === 'openai-completions' && leanHandles(model as Model<'openai-completions'>)
      ? streamLeanOpenAICompletions(model as Model<'openai-completions'>, context, options)
      : streamSimple(model as Model<Api>, context, options);
}
