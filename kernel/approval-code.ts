import { randomInt } from 'node:crypto';

/** The short codes people type to answer an approval or a pairing request: what the store issues and the parser accepts. */

/** Letters and digits nobody misreads: no 0/O, 1/I/L, 2/Z, 5/S, 8/B. */
export const CODE_ALPHABET = 'ACDEFGHJKMNPQRTUVWXY34679';
export const CODE_LENGTH = 5;

export function newCode(): string {
  let s = '';
  for (let i = 0; i < CODE_LENGTH; i++) s += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return s;
}
