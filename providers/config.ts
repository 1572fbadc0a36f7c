import { z } from 'zod';
import { type EnvBinding, NOT_RESERVED_KEY, RESERVED_KEY_MESSAGE, SLOT_ID, SLOT_ID_MESSAGE } from '../kernel/config-slice.js';

/** The providers' slices of the configuration: `provider` (from the environment), `providers` (the chain), `fallback`. */

export const PROVIDER_APIS = [
  'anthropic-messages',
  'openai-completions',
  'openai-responses',
  'azure-openai-responses',
  'google-generative-ai',
  'google-vertex',
  'mistral-conversations',
  'bedrock-converse-stream',
] as const;

/** What a model takes in besides text (pi-ai's Model.input). */
export const modelInputSchema = z
  .array(z.enum(['text', 'image']))
  .min(1)
  .refine((a) => a.includes('text'), 'must include "text"')
  .optional();

/** One slot of the provider fallback chain. */
export const slotSchema = z
  .object({
    id: z.string().regex(SLOT_ID, SLOT_ID_MESSAGE),
    /** One of pi-ai's API names. */
    api: z.enum(PROVIDER_APIS),
    model: z.string().min(1),
    /** pi-ai provider name (anthropic, openai, google, groq...): finds the model in pi-ai's catalog. */
    provider: z.string().optional(),
    baseUrl: z.string().url().optional(),
    /** Name of the environment variable holding this slot's key. */
    apiKeyEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name')
      .optional(),
    contextWindow: z.number().int().positive().optional(),
    maxTokens: z.number().int().positive().optional(),
    reasoning: z.boolean().optional(),
    /** What the model takes in: ["text", "image"] lets images reach it (default: pi-ai's catalog entry, else text only). */
    input: modelInputSchema,
    /** Whether the slot's server takes OpenAI's JSON modes (response_format); default true for the OpenAI APIs. */
    jsonModes: z.boolean().optional(),
    /** pi-ai compat flags for OpenAI-compatible servers (supportsDeveloperRole, maxTokensField...). */
    compat: z.record(z.string().regex(NOT_RESERVED_KEY, RESERVED_KEY_MESSAGE), z.unknown()).optional(),
  })
  .strict();

/** `provider`: the one provider the environment names (used when `providers` is not set). */
export const providerEnvSchema = z
  .object({
    anthropicApiKey: z.string().optional(),
    openaiApiKey: z.string().optional(),
    openaiBaseUrl: z.string().url().optional(),
    model: z.string().optional(),
    contextWindow: z.number().int().positive().optional(),
    maxTokens: z.number().int().positive().optional(),
    input: modelInputSchema,
    jsonModes: z.boolean().optional(),
  })
  .strict()
  .prefault({});

/** `providers`: the fallback chain, in order. Without it, the provider from the environment is the whole chain. */
export const providersSchema = z.array(slotSchema).min(1).optional();

/** `fallback`: how the chain cools down failing slots and how long it waits. */
export const fallbackSchema = z
  .object({
    /** Escalating cooldowns of a failing slot: 30 s, then 1 min, then 5 min (the last repeats). */
    cooldownsMs: z.array(z.number().int().positive()).min(1).default([30_000, 60_000, 300_000]),
    /** A slot whose key is refused sits out this long. */
    authCooldownMs: z.number().int().positive().default(3_600_000),
    /** With every slot failing and nothing said yet, keep retrying this long before giving up. */
    busyRetryMs: z.number().int().nonnegative().default(60_000),
    /** Tell the user once that providers are busy after this long. */
    busyNoticeMs: z.number().int().nonnegative().default(5_000),
    /**
     * How model calls are made: 'lean' (the openai-completions API over node:http without the
     * openai SDK, where it covers the model) or 'sdk' (pi-ai's SDK path for every API).
     */
    transport: z.enum(['lean', 'sdk']).default('lean'),
    /** Add a short notice in the channel when a fallback slot answered. */
    notice: z.boolean().default(false),
    timeouts: z
      .object({
        /** Until the response headers arrive. */
        connectMs: z.number().int().positive().default(15_000),
        /** Until the first streamed token. */
        firstTokenMs: z.number().int().positive().default(60_000),
        /** Longest silence between two streamed chunks. */
        idleMs: z.number().int().positive().default(30_000),
        /** The whole call. */
        totalMs: z.number().int().positive().default(600_000),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .prefault({});

/** Environment variables of the `provider` slice. */
export const PROVIDER_ENV: EnvBinding[] = [
  { env: 'ANTHROPIC_API_KEY', path: ['anthropicApiKey'], kind: 'string' },
  { env: 'OPENAI_API_KEY', path: ['openaiApiKey'], kind: 'string' },
  { env: 'OPENAI_BASE_URL', path: ['openaiBaseUrl'], kind: 'string' },
  { env: 'SWITCHBOARD_MODEL', path: ['model'], kind: 'string' },
  { env: 'SWITCHBOARD_MODEL_INPUT', path: ['input'], kind: 'list' },
];

/** Environment variables of the `fallback` slice. */
export const FALLBACK_ENV: EnvBinding[] = [{ env: 'SWITCHBOARD_PROVIDER_TRANSPORT', path: ['transport'], kind: 'string' }];

export type SlotConfig = z.infer<typeof slotSchema>;
export type ProviderEnvConfig = z.infer<typeof providerEnvSchema>;
export type FallbackSettings = z.infer<typeof fallbackSchema>;
/** What building the chain reads. */
export interface ProvidersConfig {
  provider: ProviderEnvConfig;
  providers?: SlotConfig[] | undefined;
}
