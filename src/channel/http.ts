/**
 * The parts of core's HTTP layer a channel's routes use: reading and answering a request. Routes
 * themselves are mounted through ListenContext.mount.
 */

export { RequestError, sendError } from '../http/errors.js';
export { BodyTooLargeError, checkJsonContentType, HttpError, parseJsonObject, sendJson } from '../http/server.js';
