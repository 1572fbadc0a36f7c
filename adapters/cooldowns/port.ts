/** The cooldown store port (kernel/cooldowns.ts), where the adapters and their importers find it. */
export type { CooldownState, CooldownStore } from '../../kernel/cooldowns.js';
