/**
 * The carrier keywords (Twilio's default opt-out management recognizes the same
 * words): the whole message, one word, any case, surrounding spaces and
 * punctuation ignored. "YES" alone is START; "YES K7Q2P" is an approval answer.
 */
export type Keyword = 'stop' | 'start' | 'help';

const WORDS: Record<string, Keyword> = {
  STOP: 'stop',
  STOPALL: 'stop',
  UNSUBSCRIBE: 'stop',
  CANCEL: 'stop',
  END: 'stop',
  QUIT: 'stop',
  REVOKE: 'stop',
  OPTOUT: 'stop',
  START: 'start',
  YES: 'start',
  UNSTOP: 'start',
  HELP: 'help',
  INFO: 'help',
};

export function keywordOf(text: string): Keyword | null {
  const word = text
    .trim()
    .replace(/^[\s\p{P}]+|[\s\p{P}]+$/gu, '')
    .toUpperCase();
  return Object.hasOwn(WORDS, word) ? WORDS[word]! : null;
}
