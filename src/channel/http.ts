/**
 * The parts of core's HTTP layer a channel's routes use: reading and answering a request. Routes
 * themselves are mounted through ListenContext.mount.
 */
export { BodyTooLargeError, HttpError, checkJsonContentType, parseJsonObject, sendJson } from '../http/server.js';
export { RequestError, sendError } from '../http/errors.js';
