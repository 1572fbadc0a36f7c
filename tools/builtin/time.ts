import { z } from 'zod';
import { defineTool } from '../contract.js';

export const currentTime = defineTool({
  name: 'current_time',
  description: 'The current date and time (ISO 8601, UTC, and in a given IANA time zone).',
  effect: 'read',
  idempotent: true,
  toolset: 'time',
  schema: z.object({ timeZone: z.string().optional().describe('IANA time zone, e.g. Europe/Paris') }),
  async execute({ timeZone }) {
    const now = new Date();
    let local = '';
    if (timeZone) {
      try {
        local = `\n${timeZone}: ${now.toLocaleString('en-GB', { timeZone, dateStyle: 'full', timeStyle: 'long' })}`;
      } catch {
        local = `\n(unknown time zone "${timeZone}")`;
      }
    }
    return `UTC: ${now.toISOString()}${local}`;
  },
});
