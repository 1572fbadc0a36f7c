import { createHash } from 'node:crypto';

/** The key of one tool call's arguments (their canonical JSON): an approval and its execution must agree on it. */
export function argsHash(canonicalArgs: string): string {
  return createHash('sha256').update(canonicalArgs).digest('hex');
}
