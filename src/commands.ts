import { type Bus, type Topic, topic } from '../adapters/bus/port.js';
import type { ConversationRepository } from '../adapters/store/ports/index.js';
import { QUEUE_MODES, type QueueMode } from '../kernel/queue-modes.js';
import type { ProviderStatus } from '../providers/slot.js';

/** A conversation command typed in any channel. */
export type CommandName = 'new' | 'status' | 'stop' | `mode:${string}`;

export function parseCommand(text: string): CommandName | null {
  const mode = /^\s*\/mode\s+(\w+)\s*$/i.exec(text);
  if (mode) return `mode:${mode[1]!.toLowerCase()}`;
  const m = /^\s*\/(new|reset|status|stop|cancel)\b\s*$/i.exec(text);
  if (!m) return null;
  const c = m[1]!.toLowerCase();
  return c === 'reset' ? 'new' : c === 'cancel' ? 'stop' : (c as CommandName);
}

const MODE_WORDS: Record<QueueMode, string> = {
  followup: 'each get their own answer, in order',
  collect: 'be answered together once you pause',
  steer: 'be taken into the answer I am working on',
  interrupt: 'stop what I am doing and be answered right away',
};

/** One control topic for the whole gateway: each worker process subscribes once and aborts the turns it runs. */
export const CONTROL_TOPIC: Topic<ControlEvent> = topic('ctl');

export interface ControlEvent {
  type: 'stop';
  conversationKey: string;
  reason?: string;
}

/**
 * /new starts a fresh conversation (the old one is kept, set aside), /status
 * tells the model, tokens used and pending approvals, /stop aborts the running
 * turn (the worker running it listens on the conversation's control topic).
 */
export class ConversationCommands {
  constructor(
    private readonly store: Pick<ConversationRepository, 'archiveConversation' | 'conversationStats' | 'setQueueMode'>,
    private readonly bus: Bus,
    private readonly provider: ProviderStatus,
  ) {}

  async run(cmd: CommandName, conversationKey: string): Promise<string> {
    if (cmd.startsWith('mode:')) {
      const mode = cmd.slice(5);
      if (!(QUEUE_MODES as readonly string[]).includes(mode)) return `Unknown mode "${mode}": use ${QUEUE_MODES.join(', ')}.`;
      return (await this.store.setQueueMode(conversationKey, mode))
        ? `Messages sent while I am working will now ${MODE_WORDS[mode as QueueMode]}.`
        : 'Send a first message, then set the mode.';
    }
    switch (cmd as 'new' | 'status' | 'stop') {
      case 'new':
        return (await this.store.archiveConversation(conversationKey))
          ? 'Started a new conversation: earlier messages are set aside.'
          : 'This is already a new conversation.';
      case 'status': {
        const s = await this.store.conversationStats(conversationKey);
        const model = this.provider.configured ? this.provider.slots.map((x) => `${x.id} (${x.model})`).join(' → ') : 'no model provider is configured';
        if (!s) return `Model: ${model}. No messages in this conversation yet.`;
        const state = s.running ? 'a turn is running' : s.parked ? 'a turn is waiting for an approval' : 'idle';
        return `Model: ${model}. Turns: ${s.turns}, tokens used: ${s.tokens}. Pending approvals: ${s.pendingApprovals}. Now: ${state}.`;
      }
      case 'stop': {
        const s = await this.store.conversationStats(conversationKey);
        if (!s?.running) return 'Nothing is running in this conversation.';
        await this.bus.publish(CONTROL_TOPIC, { type: 'stop', conversationKey } satisfies ControlEvent);
        return 'Stopping the current turn.';
      }
    }
  }
}
