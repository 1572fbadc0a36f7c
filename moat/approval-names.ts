import type { Tier } from './command-classifier.js';

/*
 * The approval engine's names and fixed texts, apart from the engine: the configuration's schema
 * (src/approvals/config.ts) and the answer parser (src/approvals/parse.ts) need them, and importing
 * the engine would load the shell parser (mvdan-sh) into every process that reads the configuration.
 */

/**
 * strict: only reads run unasked. supervised (default): reads and safe commands
 * run; writes, sends and anything riskier ask. trusted: writes and caution-tier
 * commands run too; sends and dangerous commands still ask.
 */
export type Autonomy = 'strict' | 'supervised' | 'trusted';
export const AUTONOMY_LEVELS: readonly Autonomy[] = ['strict', 'supervised', 'trusted'];
/** Tiers at which the requester may be allowed to approve their own call (approvals.requesterMay); never dangerous. */
export const SELF_APPROVABLE_TIERS = ['safe', 'caution'] as const satisfies readonly Tier[];
/** The reason saying why a call cannot become a rule starts with this. */
export const NO_RULE_PREFIX = '"Always allow" is not offered: ';
