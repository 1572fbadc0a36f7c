/** Every persistence port in one place; the Postgres implementations are the sibling files of this folder. */

export type * from './access.js';
export type * from './approvals.js';
export type * from './channel-state.js';
export type * from './console-queries.js';
export type * from './conversations.js';
export type * from './deliveries.js';
export type * from './inbox.js';
export { senderIdentity } from './inbox.js';
export type * from './ingress-outcomes.js';
export type * from './memory.js';
export type * from './tool-results.js';
export type * from './transcript.js';
export type * from './turns.js';
export type * from './webhooks.js';
