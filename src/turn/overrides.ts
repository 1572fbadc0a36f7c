import type { InboxMessage } from '../../adapters/store/ports/index.js';
import type { ResponseFormat } from '../../kernel/envelope.js';
import type { Config } from '../config.js';

/**
 * The model-call settings of a turn: the agent's, with what its newest message asked for itself
 * (the HTTP API's `temperature`, `max_tokens`); maxTokens never above the agent's own.
 */
export function modelSettings(
  agent: Config['agents'][string],
  batch: readonly Pick<InboxMessage, 'overrides'>[],
): { maxTokens?: number; temperature?: number; responseFormat?: ResponseFormat } {
  const asked = batch[batch.length - 1]?.overrides ?? {};
  const maxTokens = asked.maxTokens !== undefined ? Math.min(asked.maxTokens, agent.maxTokens ?? asked.maxTokens) : agent.maxTokens;
  const temperature = asked.temperature ?? agent.temperature;
  return {
    ...(maxTokens ? { maxTokens } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(asked.responseFormat ? { responseFormat: asked.responseFormat } : {}),
  };
}
