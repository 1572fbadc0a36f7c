import { SwitchboardError } from '../../kernel/errors.js';

/**
 * A stored reply target this channel could not have written (a bad row, a row of another version).
 * Not retryable: the row reads the same on every attempt, so its drain job fails at once.
 */
export class ReplyToError extends SwitchboardError {
  readonly code = 'reply_to_invalid';
  constructor(
    readonly channel: string,
    readonly problem: string,
  ) {
    super(`${channel}: the stored reply target is not valid: ${problem}`);
    this.name = 'ReplyToError';
  }
}

/**
 * Hand validation helpers for parseReplyTo: each reads one field of a stored object and throws
 * ReplyToError naming it. Values are own properties only ("__proto__" names nothing).
 */
export function replyToObject(channel: string, raw: unknown): Record<string, unknown> {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    throw new ReplyToError(channel, `expected an object, got ${raw === null ? 'null' : Array.isArray(raw) ? 'an array' : typeof raw}`);
  return raw as Record<string, unknown>;
}

const own = (o: Record<string, unknown>, key: string): unknown => (Object.hasOwn(o, key) ? o[key] : undefined);

/** A required non-empty string of at most max characters (platform ids are short). */
export function stringField(channel: string, o: Record<string, unknown>, key: string, max = 512): string {
  const v = own(o, key);
  if (typeof v !== 'string' || !v || v.length > max) throw new ReplyToError(channel, `"${key}" must be a non-empty string of at most ${max} characters`);
  return v;
}

/** An optional string: absent (or null) is undefined; anything else but a string is an error. */
export function optionalString(channel: string, o: Record<string, unknown>, key: string, max = 512): string | undefined {
  const v = own(o, key);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.length > max) throw new ReplyToError(channel, `"${key}" must be a string of at most ${max} characters`);
  return v;
}

export function optionalBoolean(channel: string, o: Record<string, unknown>, key: string): boolean | undefined {
  const v = own(o, key);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw new ReplyToError(channel, `"${key}" must be true or false`);
  return v;
}

export function stringArray(channel: string, o: Record<string, unknown>, key: string, maxItems = 200, max = 998): string[] {
  const v = own(o, key);
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.length > maxItems || !v.every((x) => typeof x === 'string' && x.length <= max))
    throw new ReplyToError(channel, `"${key}" must be a list of strings`);
  return v as string[];
}
