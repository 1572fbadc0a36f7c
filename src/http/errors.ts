import type { ServerResponse } from 'node:http';
import { SwitchboardError } from '../../kernel/errors.js';
import { sendJson } from './json-response.js';

/**
 * The HTTP status of each core error code that reaches the HTTP API: the one place where a
 * code (kernel/errors.ts, the approval service's refusals) becomes a status. Core types carry
 * the code only.
 */
export const HTTP_STATUS_OF_CODE: Readonly<Record<string, number>> = {
  // Ingress (src/ingress.ts ConversationFullError): the waiting cap refused the message.
  conversation_full: 429,
  // Approval answers refused (src/approvals/service.ts ApprovalRefusal).
  invalid_value: 400,
  not_operator: 403,
  unknown_code: 404,
  always_not_permitted: 409,
  already_decided: 409,
  expired: 410,
  too_many_attempts: 429,
  // Human takeover (src/handoffs/service.ts HandoffError).
  conversation_not_found: 404,
  already_taken: 409,
  not_taken_over: 409,
  // The store or queue is unavailable (adapters/errors/types.ts classifyUnavailable): answered with Retry-After.
  store_unavailable: 503,
  queue_unavailable: 503,
};

/** Seconds a client is told to wait (Retry-After) when a code's status is 503: the backing service is usually back within seconds. */
export const RETRY_AFTER_SECONDS_OF_CODE: Readonly<Record<string, number>> = {
  store_unavailable: 2,
  queue_unavailable: 2,
};

/** The status for a core error code; 500 for a code the table does not know. */
export function httpStatusOf(code: string): number {
  return HTTP_STATUS_OF_CODE[code] ?? 500;
}

/**
 * A request the gateway refuses, answered with `status` in the OpenAI error
 * shape ({ error: { message, type, param, code } }). Thrown anywhere under a
 * handler, it becomes that answer (the router catches it). `code` is the body's code.
 */
export class HttpError extends SwitchboardError {
  override readonly retryable: boolean;
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null,
    readonly code: string,
  ) {
    super(message);
    this.name = 'HttpError';
    // 503 (starting) and 429 say: the same request may succeed later.
    this.retryable = status === 503 || status === 429;
  }
}

export class BodyTooLargeError extends HttpError {
  constructor(readonly limit: number) {
    super(413, `Request body too large: the limit is ${limit} bytes.`, null, 'request_too_large');
    this.name = 'BodyTooLargeError';
  }
}

/** The client went away before its request was read: there is nobody to answer. */
export class ClientGoneError extends SwitchboardError {
  readonly code = 'client_gone';
  constructor() {
    super('the client closed the connection before the request body was read');
    this.name = 'ClientGoneError';
  }
}

/**
 * A refused request of the HTTP API. An HttpError: thrown from a handler
 * without being caught, the router answers it in the same shape.
 */
export class RequestError extends HttpError {
  constructor(status: number, message: string, param: string | null, code: string) {
    super(status, message, param, code);
    this.name = 'RequestError';
  }
}

/** OpenAI-style error answer: { error: { message, type, param, code } }. */
export function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  opts: { type?: string; param?: string | null; code?: string | null } = {},
  headers: Record<string, string> = {},
): void {
  const type = opts.type ?? (status === 401 ? 'authentication_error' : status >= 500 ? 'server_error' : 'invalid_request_error');
  sendJson(
    res,
    status,
    { error: { message, type, param: opts.param ?? null, code: opts.code ?? null } },
    { ...(status === 401 ? { 'www-authenticate': 'Bearer' } : {}), ...headers },
  );
}

/** A core error whose code the table knows, answered with its status, message and code. False when the table does not know it. */
export function sendCoreError(res: ServerResponse, err: unknown, opts: { type?: string; message?: string } = {}): boolean {
  if (!(err instanceof SwitchboardError) || HTTP_STATUS_OF_CODE[err.code] === undefined) return false;
  const retryAfter = RETRY_AFTER_SECONDS_OF_CODE[err.code];
  sendError(
    res,
    httpStatusOf(err.code),
    opts.message ?? err.message,
    { type: opts.type, code: err.code },
    retryAfter ? { 'retry-after': String(retryAfter) } : {},
  );
  return true;
}
