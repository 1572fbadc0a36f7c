/**
 * The errors a channel's config.ts throws, apart from the whole SDK (index.ts: the HTTP server's types,
 * the reply engine, the SSRF guard...), so that validating a section (doctor, start's checks) loads no
 * more than the parser. The sections several channels share (groups, catchUp) are in ./sections.ts.
 */
export { ConfigError, configError, issueProblems } from '../config.js';
