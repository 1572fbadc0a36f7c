/** The verdict vocabulary of the command classifier, in its own module so the rule files can use it without importing the classifier. */

export type Tier = 'safe' | 'caution' | 'dangerous' | 'blocked';

export interface Classification {
  tier: Tier;
  reasons: string[];
}

export const TIER_ORDER: Record<Tier, number> = { safe: 0, caution: 1, dangerous: 2, blocked: 3 };
