import { type AssistantMessage, isContextOverflow } from '@mariozechner/pi-ai';

/** Why a model call failed. */
export type ErrorClass = 'rate_limit' | 'overloaded' | 'server' | 'timeout' | 'network' | 'auth' | 'context_overflow' | 'bad_request' | 'aborted';

/** What the chain does about each class. */
export const ADVANCES: Record<ErrorClass, boolean> = {
  rate_limit: true,
  overloaded: true,
  server: true,
  timeout: true,
  network: true,
  auth: true, // after disabling the slot for a long cooldown
  context_overflow: false, // handled apart: compaction, then a slot with a larger window
  bad_request: false, // the next slot would get the same bad request
  aborted: false, // the caller asked for it
};

/** What the transport saw of the failed request (see http-observer). */
export interface HttpObservation {
  status?: number;
  retryAfterMs?: number;
}

/**
 * Classifies a failed pi-ai result. pi-ai never throws: the status, when there
 * was one, is in the observed HTTP response or at the head of errorMessage.
 */
export function classifyError(msg: Pick<AssistantMessage, 'stopReason' | 'errorMessage' | 'usage'>, http: HttpObservation = {}): ErrorClass {
  const text = msg.errorMessage ?? '';
  if (isContextOverflow(msg as AssistantMessage)) return 'context_overflow';
  const status = http.status && http.status >= 400 ? http.status : Number(/^(\d{3})\b/.exec(text)?.[1] ?? 0);
  // Error bodies that arrive inside a stream carry the vendor's error type.
  if (/overloaded/i.test(text)) return 'overloaded';
  if (status === 429 || /rate[ _-]?limit/i.test(text)) return 'rate_limit';
  if (status === 529 || status === 503) return 'overloaded';
  if (status === 401 || status === 403 || /authentication_error|invalid[ _-]api[ _-]key|permission_error/i.test(text)) return 'auth';
  if (status === 408) return 'timeout';
  if (status >= 500) return 'server';
  if (status >= 400) return 'bad_request';
  if (/invalid_request_error/i.test(text)) return 'bad_request';
  if (/timed? ?out|timeout/i.test(text)) return 'timeout';
  if (/api_error|server_error|internal/i.test(text)) return 'server';
  // "terminated", "Connection error.", ECONNREFUSED, socket hang up, fetch failed...
  return 'network';
}

/** Retry-After: seconds or an HTTP date. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
