import { z } from 'zod';
import { recordKey } from './config-record-key.js';

/** Access control's slices of the configuration: `access` (who may talk, per channel) and `pairing` (see src/access.ts). */
export const ACCESS_POLICIES = ['allowlist', 'pairing', 'open', 'disabled'] as const;
export type AccessPolicy = (typeof ACCESS_POLICIES)[number];

/** Who may talk to the agent, per channel. Default: allowlist with nobody on it. */
export const accessSchema = z
  .record(
    recordKey,
    z
      .object({
        policy: z.enum(ACCESS_POLICIES).default('allowlist'),
        allow: z.array(z.string()).default([]),
      })
      .strict(),
  )
  .default({});

export const pairingSchema = z
  .object({
    codeTtlMs: z.number().int().positive().default(3_600_000),
    maxPendingPerChannel: z.number().int().positive().default(20),
  })
  .strict()
  .prefault({});

export type AccessConfig = z.infer<typeof accessSchema>;
export type PairingConfig = z.infer<typeof pairingSchema>;
