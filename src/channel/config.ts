/**
 * The part of the channel SDK a channel's config.ts needs (the errors, the shared sections), apart from
 * the whole SDK (index.ts: the HTTP server's types, the reply engine, the SSRF guard...), so that
 * validating a section (doctor, start's checks) loads no more than the parser.
 */
export { ConfigError, configError, issueProblems } from '../config.js';
export { type GroupsPolicy, groupsSchema } from './addressed.js';
export { catchUpSchema } from './catch-up.js';
