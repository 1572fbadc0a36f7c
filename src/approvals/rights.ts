import { entryNames, type Identity, parseIdentity } from '../../kernel/identity.js';
import type { ApprovalsConfig } from './config.js';

/** Channels whose authenticated senders are API-key principals: an operator key's id starts "op:" (src/http/auth.ts). */
const KEY_CHANNELS = new Set(['http', 'mcp']);

/** A configured operator of the identity's own channel (`approvals.operators.<channel>`): an id listed for one channel is nobody on another. */
export function isConfiguredOperator(cfg: Pick<ApprovalsConfig, 'operators'>, who: Identity): boolean {
  return Object.hasOwn(cfg.operators, who.channel) && cfg.operators[who.channel]!.some((e) => entryNames(e, who));
}

/**
 * Whether the person who asked may answer their own request (the rule
 * ApprovalService.answer applies): an operator may always; anyone else only at a
 * tier listed in approvals.requesterMay, never dangerous. What the request says
 * to them follows from it ("Reply YES K7Q4P" or "An operator must approve this").
 */
export function requesterMayAnswer(cfg: Pick<ApprovalsConfig, 'operators' | 'requesterMay'>, requester: string | null | undefined, tier: string): boolean {
  const who = requester ? parseIdentity(requester) : undefined;
  if (!who) return false;
  // Only an authenticated request carries an API-key principal's id; "op:" is an operator key's.
  if (KEY_CHANNELS.has(who.channel) && who.id.startsWith('op:')) return true;
  if (isConfiguredOperator(cfg, who)) return true;
  return tier !== 'dangerous' && (cfg.requesterMay as string[]).includes(tier);
}
