import type { EventHub } from '../../webhooks/events.js';
import type { ConversationRecord, TurnSink } from '../ports.js';

/**
 * The event-webhook sink: a closed turn is turn.completed or turn.failed (a parked
 * one is neither yet), and a turn a fallback slot answered is also provider.fallback.
 * The hub only enqueues: a subscriber never holds the turn up.
 */
export function eventWebhookSink(hub: EventHub, conv: Pick<ConversationRecord, 'id' | 'key' | 'channel'>): TurnSink {
  return {
    push: (e) => {
      if (e.type !== 'done') return;
      const data = {
        conversation: conv.id,
        conversationKey: conv.key,
        channel: conv.channel,
        turn: e.turnId,
        finishReason: e.finishReason,
        text: e.text,
        usage: e.usage,
        slot: e.provider?.slot ?? null,
      };
      if (e.finishReason !== 'approval_pending') hub.emit(e.finishReason === 'error' ? 'turn.failed' : 'turn.completed', data);
      if (e.provider?.fallbackActivated) hub.emit('provider.fallback', { ...data, attempts: e.provider.attempts });
    },
  };
}
