import type { Logger } from 'pino';
import { SwitchboardError } from '../../kernel/errors.js';
import type { WhatsAppMessage, WhatsAppSender } from './client.js';

export interface SendFailure {
  status?: number;
  /** Twilio error code (63016 outside the window, 63024 invalid recipient, 20429 too many requests...). */
  code?: number;
  message: string;
}

/** Retries ran out on a transient failure: the turn is retried later. */
export class TransientSendError extends SwitchboardError {
  readonly code = 'whatsapp_send_failed';
  override readonly retryable = true;
  constructor(readonly failure: SendFailure) {
    super(`whatsapp send failed: ${failure.message}`);
    this.name = 'TransientSendError';
  }
}

/** Reads what the twilio client threw (RestException {status, code}; network errors carry neither). */
function describeFailure(err: unknown): SendFailure {
  const e = err as { status?: unknown; code?: unknown; message?: unknown };
  const status = typeof e?.status === 'number' ? e.status : undefined;
  const code = typeof e?.code === 'number' ? e.code : undefined;
  return { ...(status !== undefined ? { status } : {}), ...(code !== undefined ? { code } : {}), message: String(e?.message ?? err) };
}

const isTransient = (f: SendFailure) => f.status === undefined || f.status === 429 || f.status >= 500 || f.code === 20429;

export type SendResult = { ok: true; sid: string } | { ok: false; failure: SendFailure };

/** One create with retries on 429, 5xx and network failures (exponential backoff); a refusal comes back at once. */
export async function sendWithRetry(
  sender: WhatsAppSender,
  msg: WhatsAppMessage,
  opts: { attempts: number; baseMs: number; maxMs: number; log: Logger },
): Promise<SendResult> {
  for (let attempt = 1; ; attempt++) {
    let failure: SendFailure;
    try {
      const r = await sender.create(msg);
      return { ok: true, sid: r.sid };
    } catch (err) {
      failure = describeFailure(err);
      if (!isTransient(failure)) return { ok: false, failure };
    }
    if (attempt >= opts.attempts) throw new TransientSendError(failure);
    const ms = Math.round(Math.min(opts.maxMs, opts.baseMs * 2 ** (attempt - 1)) * (0.75 + Math.random() * 0.5));
    opts.log.warn({ status: failure.status, code: failure.code, attempt, retryInMs: ms }, `whatsapp send failed, retrying: ${failure.message}`);
    await new Promise((r) => setTimeout(r, ms));
  }
}
