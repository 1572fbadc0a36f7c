import type { Logger } from 'pino';
import { SwitchboardError } from '../../kernel/errors.js';
import type { MessagesApi, OutgoingMessage } from './client.js';

/** The channels that send through Twilio's Messages API (names log lines and error codes). */
export type TwilioChannel = 'sms' | 'whatsapp';

export interface SendFailure {
  /** HTTP status from the REST API (none for a network failure). */
  status?: number;
  /** Twilio error code (21610 unsubscribed, 21211 invalid number, 63016 outside the WhatsApp window, 20429 too many requests...). */
  code?: number;
  message: string;
}

/** Retries ran out on a transient failure: the turn should be retried later. */
export class TransientSendError extends SwitchboardError {
  readonly code: string;
  override readonly retryable = true;
  constructor(
    readonly failure: SendFailure,
    channel: TwilioChannel = 'sms',
  ) {
    super(`${channel} send failed: ${failure.message}`);
    this.code = `${channel}_send_failed`;
    this.name = 'TransientSendError';
  }
}

export type SendResult = { ok: true; sid: string; status: string; found?: boolean } | { ok: false; failure: SendFailure };

/** Reads what the twilio client threw (RestException {status, code}; network errors carry neither). */
export function describeFailure(err: unknown): SendFailure {
  const e = err as { status?: unknown; code?: unknown; message?: unknown };
  const status = typeof e?.status === 'number' ? e.status : undefined;
  const code = typeof e?.code === 'number' ? e.code : undefined;
  return { ...(status !== undefined ? { status } : {}), ...(code !== undefined ? { code } : {}), message: String(e?.message ?? err) };
}

/** 429, 5xx and failures without an HTTP answer (connection refused, reset, timeout) may succeed later. */
export function isTransient(f: SendFailure): boolean {
  return f.status === undefined || f.status === 429 || f.status >= 500 || f.code === 20429;
}

/**
 * A failure after which Twilio may have created the message anyway: no HTTP answer (timeout,
 * reset: the request may have arrived and its response been lost) or a 5xx. A 429 created nothing.
 */
export function mayHaveBeenCreated(f: SendFailure): boolean {
  return f.status === undefined || f.status >= 500;
}

export interface RetryOptions {
  /** Names the log lines and TransientSendError's code. */
  channel: TwilioChannel;
  attempts: number;
  baseMs: number;
  maxMs: number;
  log: Logger;
  sleep?: (ms: number) => Promise<void>;
  /**
   * Looks the message up on Twilio (reconcile.ts): called before any create that follows a
   * try whose outcome is unknown, so a message created despite a lost answer is not sent twice.
   */
  lookup?: () => Promise<{ sid: string; status: string } | null>;
  /** An earlier attempt of the turn recorded the intent and never learnt the outcome: look up first. */
  unknownAtStart?: boolean;
}

/**
 * One message, with retries: transient failures back off exponentially (with
 * jitter) up to `attempts` tries, then throw TransientSendError; permanent ones
 * come back as {ok: false} at once. After a try that may have created the message
 * (and at the start when `unknownAtStart`), `lookup` runs before the next create; a
 * failed look-up counts as a failed try (the outcome stays unknown, nothing is sent).
 */
export async function sendWithRetry(sender: MessagesApi, msg: OutgoingMessage, opts: RetryOptions): Promise<SendResult> {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const ch = opts.channel;
  let unknown = Boolean(opts.unknownAtStart && opts.lookup);
  for (let attempt = 1; ; attempt++) {
    let failure: SendFailure;
    if (unknown && opts.lookup) {
      try {
        const found = await opts.lookup();
        if (found) {
          opts.log.info({ sid: found.sid, status: found.status }, `${ch}: Twilio had created this message already (its answer was lost); not sending it again`);
          return { ok: true, sid: found.sid, status: found.status, found: true };
        }
        unknown = false;
      } catch (err) {
        failure = describeFailure(err);
        opts.log.warn({ status: failure.status, code: failure.code }, `${ch}: could not look the message up on Twilio: ${failure.message}`);
      }
    }
    if (!unknown) {
      try {
        const m = await sender.create(msg);
        return { ok: true, sid: m.sid, status: m.status };
      } catch (err) {
        failure = describeFailure(err);
        if (!isTransient(failure)) return { ok: false, failure };
        if (opts.lookup && mayHaveBeenCreated(failure)) unknown = true;
      }
    }
    if (attempt >= opts.attempts) throw new TransientSendError(failure!, ch);
    const delay = Math.min(opts.maxMs, opts.baseMs * 2 ** (attempt - 1));
    const ms = Math.round(delay * (0.75 + Math.random() * 0.5));
    opts.log.warn({ status: failure!.status, code: failure!.code, attempt, retryInMs: ms }, `${ch} send failed, retrying: ${failure!.message}`);
    await sleep(ms);
  }
}
