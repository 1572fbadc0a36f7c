import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { conversationKey } from '../../src/envelope.js';

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

/**
 * /new starts a fresh conversation in a place by giving it a generation: the id
 * of the /new interaction (a snowflake), appended to the thread part of the key
 * ("<thread or main>~g<id>"), so the old conversation keeps its history and the
 * next message opens a new one. The generations live in a small JSON file under
 * the data folder (<dataDir>/discord/generations.json), read at start and
 * rewritten (atomically) on /new.
 */
export class Generations {
  private map = new Map<string, string>();
  private readonly file: string;

  constructor(dataDir: string) {
    this.file = join(dataDir, 'discord', 'generations.json');
    try {
      const raw = JSON.parse(readFileSync(this.file, 'utf8')) as Record<string, string>;
      for (const [k, v] of Object.entries(raw)) if (typeof v === 'string') this.map.set(k, v);
    } catch {
      /* none yet */
    }
  }

  key(p: DiscordPlace): string {
    const gen = this.map.get(baseKey(p));
    if (!gen) return baseKey(p);
    return conversationKey({
      channel: 'discord',
      workspace: p.guildId ?? '@dm',
      chat: p.parentId ?? p.channelId,
      thread: `${p.parentId ? p.channelId : 'main'}~g${gen}`,
    });
  }

  generation(p: DiscordPlace): string | undefined {
    return this.map.get(baseKey(p));
  }

  /** Starts a new conversation in the place; returns its key. */
  renew(p: DiscordPlace, generation: string): string {
    this.map.set(baseKey(p), generation);
    mkdirSync(dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(Object.fromEntries(this.map), null, 1));
    renameSync(tmp, this.file);
    return this.key(p);
  }
}
