/** Discord's message limit; the splitting itself is the SDK's (fence-aware, prefix-stable). */
import { splitFenced } from '../../kernel/text-split.js';

export const DISCORD_LIMIT = 2000;

export function splitMessage(text: string, limit = DISCORD_LIMIT): string[] {
  return splitFenced(text, limit);
}
