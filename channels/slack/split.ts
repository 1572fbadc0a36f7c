/**
 * Splits a long reply into Slack messages of at most `max` characters: the
 * SDK's splitter (line boundaries, a code fence cut in two closed and reopened,
 * prefix-stable so a streamed reply never rewrites a finished message).
 */
import { splitFenced } from '../../kernel/text-split.js';

export function splitMessage(text: string, max: number): string[] {
  return splitFenced(text, max);
}
