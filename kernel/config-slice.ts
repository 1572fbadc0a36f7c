/**
 * What every module's configuration slice is made of, below every module that owns one
 * (providers/config.ts, tools/config.ts, moat/config.ts, src/.../config.ts): the problem a
 * validation reports, an environment variable bound to a key, and the names no record key may have.
 */

/** One problem in the configuration: the key, its environment variable if it has one, and what is wrong. */
export interface ConfigProblem {
  path: string;
  env?: string;
  message: string;
  /** The closest allowed name, for an unknown key or value. */
  suggestion?: string;
}

/** An environment variable that sets one key; `path` is relative to the slice that declares it. */
export interface EnvBinding {
  env: string;
  path: string[];
  kind: 'string' | 'int' | 'list' | 'bool';
}

/**
 * Names every plain object has through Object.prototype: never a key of a
 * configured record (agents, channels, operators per channel...), since those
 * are looked up by names that come from requests and messages.
 */
export const RESERVED_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'toLocaleString',
  'valueOf',
  'hasOwnProperty',
  'isPrototypeOf',
  'propertyIsEnumerable',
  '__defineGetter__',
  '__defineSetter__',
  '__lookupGetter__',
  '__lookupSetter__',
] as const;
/** Matches every string except a reserved key (for a schema's record keys). */
export const NOT_RESERVED_KEY = new RegExp(`^(?!(?:${RESERVED_KEYS.join('|')})$)`);
export const RESERVED_KEY_MESSAGE = `must not be one of ${RESERVED_KEYS.join(', ')}`;

/** Slot ids name provider slots (providers) and are referred to by other slices (moat, compaction). */
export const SLOT_ID = /^[a-zA-Z0-9._-]+$/;
export const SLOT_ID_MESSAGE = 'slot ids are letters, digits and . _ -';
