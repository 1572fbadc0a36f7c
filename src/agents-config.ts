import { z } from 'zod';
import { recordKey } from './config-record-key.js';

/** The agents' slice of the configuration: `agents.<name>.*` (the `model` names of the HTTP API; see src/prompt.ts). */
export const agentSchema = z
  .object({
    description: z.string().default('The Switchboard agent'),
    /** Extra system prompt text for this agent, appended after prompts/identity.md and rules.md. */
    instructions: z.string().optional(),
    /** Most model calls in one turn. */
    maxIterations: z.number().int().positive().default(90),
    /** Most transcript messages loaded into a turn. */
    historyLimit: z.number().int().positive().default(200),
    maxTokens: z.number().int().positive().optional(),
    temperature: z.number().min(0).max(2).optional(),
  })
  .strict();

export const agentsSchema = z
  .record(recordKey.regex(/^[a-zA-Z0-9._-]+$/, 'agent names are letters, digits and . _ -'), agentSchema)
  .default({ default: agentSchema.parse({}) });

export type AgentConfig = z.infer<typeof agentSchema>;
