import type { AccessRepository } from '../adapters/store/ports/access.js';
import { newCode } from '../kernel/approval-code.js';
import { entryForms, entryNames, type Identity, localId } from '../kernel/identity.js';
import type { AccessPolicy } from './access-config.js';
import type { Config } from './config.js';

export type { AccessPolicy };

export type AccessVerdict = { allowed: true } | { allowed: false; reply?: string };

/**
 * Who may talk to the agent, per channel: an allowlist (configured ids, plus
 * senders an operator allowed), pairing (an unknown sender gets a short code
 * that expires; an operator approves it), open, or disabled. Default: allowlist.
 * Everything is per channel and per whole identity: an id allowed (or an
 * operator) on one channel is nobody on another. Access rows hold the
 * identity's channel and its local form (`T1:U1` on Slack, the id elsewhere).
 */
export class AccessControl {
  constructor(
    private readonly store: AccessRepository,
    private readonly config: Config,
  ) {}

  policy(channel: string): { policy: AccessPolicy; allow: string[] } {
    const c = Object.hasOwn(this.config.access, channel) ? this.config.access[channel] : undefined;
    return { policy: c?.policy ?? 'allowlist', allow: c?.allow ?? [] };
  }

  async check(sender: Identity): Promise<AccessVerdict> {
    const { channel } = sender;
    const { policy, allow } = this.policy(channel);
    if (policy === 'open') return { allowed: true };
    if (policy === 'disabled') return { allowed: false };
    // Operators of a channel may always talk to it.
    const operators = Object.hasOwn(this.config.approvals.operators, channel) ? this.config.approvals.operators[channel]! : [];
    if (allow.some((e) => entryNames(e, sender)) || operators.some((e) => entryNames(e, sender))) return { allowed: true };
    const row = await this.store.get(channel, entryForms(sender));
    if (row?.status === 'allowed') return { allowed: true };
    if (row?.status === 'denied') return { allowed: false };
    if (policy === 'allowlist') return { allowed: false, reply: 'Sorry, this assistant only answers people on its allowlist.' };
    const cfg = this.config.pairing;
    if (
      !(row?.status === 'pending' && row.expiresAt && new Date(row.expiresAt) > new Date()) &&
      (await this.store.pendingCount(channel)) >= cfg.maxPendingPerChannel
    ) {
      return { allowed: false, reply: 'Sorry, too many pairing requests are waiting; please try again later.' };
    }
    const req = await this.store.requestPairing(channel, localId(sender), newCode(), cfg.codeTtlMs);
    return { allowed: false, reply: `To talk to this assistant, ask an operator to approve pairing code ${req.code}.` };
  }
}
