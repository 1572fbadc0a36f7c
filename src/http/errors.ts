import { HttpError } from './server.js';

/** OpenAI-style error object: { error: { message, type, param, code } }. */
export { sendError } from './server.js';

/**
 * A refused request of the HTTP API. An HttpError: thrown from a handler
 * without being caught, the router answers it in the same shape.
 */
export class RequestError extends HttpError {
  constructor(status: number, message: string, param: string | null = null, code: string | null = null) {
    super(status, message, param, code);
    this.name = 'RequestError';
  }
}
