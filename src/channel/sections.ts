/** The configuration sections several channels share (channels.<name>.groups, .catchUp), for their config.ts. */
export { type GroupsPolicy, groupsSchema } from './addressed.js';
export { catchUpSchema } from './catch-up.js';
