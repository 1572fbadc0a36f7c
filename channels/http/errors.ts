import type { ServerResponse } from 'node:http';
import { sendJson } from '../../src/http/server.js';

/** OpenAI-style error object: { error: { message, type, param, code } }. */
export function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  opts: { type?: string; param?: string | null; code?: string | null } = {},
): void {
  const type = opts.type ?? (status === 401 ? 'authentication_error' : status >= 500 ? 'server_error' : 'invalid_request_error');
  sendJson(res, status, { error: { message, type, param: opts.param ?? null, code: opts.code ?? null } }, status === 401 ? { 'www-authenticate': 'Bearer' } : {});
}

export class RequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'RequestError';
  }
}
