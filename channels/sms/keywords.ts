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

/**
 * Twilio's own verdict: with Advanced Opt-Out (and its default keyword handling) the
 * inbound webhook carries OptOutType = STOP, START or HELP when the message matched one
 * of the service's keywords, localized ones included (ARRET, COMMENCER...). It wins over
 * our English list: Twilio has already opted the number out (or in), whatever we think.
 */
export function keywordOfOptOutType(optOutType: string | undefined): Keyword | null {
  switch (optOutType?.trim().toUpperCase()) {
    case 'STOP':
      return 'stop';
    case 'START':
      return 'start';
    case 'HELP':
      return 'help';
    default:
      return null;
  }
}
