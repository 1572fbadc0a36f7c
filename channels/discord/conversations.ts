import { conversationKey } from '../../kernel/envelope.js';
import type { ChannelState as ChannelStateStore } from '../../src/channel/index.js';

/** Where a Discord conversation lives: a DM channel, a guild channel, or a thread of one. */
export interface DiscordPlace {
  guildId: string | null;
  /** The channel the message was posted in (the thread itself, for a thread). */
  channelId: string;
  /** Set when channelId is a thread: its parent channel. */
  parentId: string | null;
}

/** The conversation of a place before any /new: one per DM, per guild channel, per thread. */
export function baseKey(p: DiscordPlace): string {
  return conversationKey({
    channel: 'discord',
    workspace: p.guildId ?? '@dm',
    chat: p.parentId ?? p.channelId,
    ...(p.parentId ? { thread: p.channelId } : {}),
  });
}

/** The key of a place in a given generation (none: the base key). */
export function keyFor(p: DiscordPlace, generation: string | undefined): string {
  if (!generation) return baseKey(p);
  return conversationKey({
    channel: 'discord',
    workspace: p.guildId ?? '@dm',
    chat: p.parentId ?? p.channelId,
    thread: `${p.parentId ? p.channelId : 'main'}~g${generation}`,
  });
}

/**
 * /new starts a fresh conversation in a place by giving it a generation: the id
 * of the /new interaction (a snowflake), appended to the thread part of the key
 * ("<thread id or main>~g<id>"), so the old conversation keeps its history and
 * the next message opens a new one. Generations live in the shared channel
 * state (channel "discord", key "generation:<base key>"), so every ingress
 * process sees a /new at once; each message reads its place's generation.
 */
export class Generations {
  constructor(private readonly state: ChannelStateStore) {}

  private static stateKey(p: DiscordPlace): string {
    return `generation:${baseKey(p)}`;
  }

  async generation(p: DiscordPlace): Promise<string | undefined> {
    const v = await this.state.get<string>('discord', Generations.stateKey(p));
    return typeof v === 'string' ? v : undefined;
  }

  async key(p: DiscordPlace): Promise<string> {
    return keyFor(p, await this.generation(p));
  }

  /** Starts a new conversation in the place; returns its key. */
  async renew(p: DiscordPlace, generation: string): Promise<string> {
    await this.state.set('discord', Generations.stateKey(p), generation);
    return keyFor(p, generation);
  }
}
