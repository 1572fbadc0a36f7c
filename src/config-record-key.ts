import { z } from 'zod';
import { NOT_RESERVED_KEY, RESERVED_KEY_MESSAGE } from '../kernel/config-slice.js';

/** A key of a configured record (agents, access, operators per channel...): never a name of Object.prototype. */
export const recordKey = z.string().regex(NOT_RESERVED_KEY, RESERVED_KEY_MESSAGE);
