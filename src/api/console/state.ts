import type { ProviderChain } from '../../../providers/chain.js';
import { visibleCall } from '../../approvals/render.js';
import type { Config } from '../../config.js';
import type { CoreInfra } from '../../core-infra.js';
import type { ApiKeyAuth } from '../../http/auth.js';
import { rulesJson } from '../approvals-api.js';

export interface ConsoleDeps {
  auth: ApiKeyAuth;
  infra: CoreInfra;
  chain: ProviderChain | null;
  /** The effective configuration (shown masked). */
  config: Config;
  /** The operator's /readyz body: checks of store, queue, bus, provider, workers and channels. */
  health: () => Promise<Record<string, unknown>>;
  /** Messages not answered, by channel and reason, since this process started (switchboard_messages_dropped_total). */
  dropped?: () => Promise<Array<{ channel: string; reason: string; count: number }>>;
}

/** A conversation's state as the console shows it: its latest turn running, parked for approval, or nothing running. */
function conversationState(status: string | null): 'running' | 'parked' | 'idle' {
  return status === 'running' ? 'running' : status === 'parked' ? 'parked' : 'idle';
}

/**
 * What the console polls: conversations (channel, sender, last activity, state),
 * turn latencies without the time parked waiting for a human, pending approvals
 * (arguments made visible, reasons, expiry, conversation, requester), rules,
 * provider slots, pairing requests, the queue and the operator's /readyz checks.
 */
export async function consoleState(deps: ConsoleDeps): Promise<Record<string, unknown>> {
  const { infra } = deps;
  const [conversations, latencies, queue, approvals, slots, pairing, rules, health, dropped] = await Promise.all([
    infra.store.repos.console.recentConversations(30),
    infra.store.repos.console.turnLatencies(60),
    infra.queue.counts().catch(() => null),
    infra.approvals.pending(),
    deps.chain ? deps.chain.health().catch(() => []) : Promise.resolve([]),
    infra.access.list('pending'),
    infra.approvals.rules().then((r) => rulesJson(r, infra.store)),
    deps.health().catch((err: unknown) => ({ ready: false, error: (err as Error).message })),
    deps.dropped ? deps.dropped().catch(() => []) : Promise.resolve([]),
  ]);
  const keys = new Map<string, string | undefined>();
  for (const a of approvals) if (!keys.has(a.conversationId)) keys.set(a.conversationId, (await infra.store.conversation(a.conversationId))?.key);
  return {
    now: new Date().toISOString(),
    conversations: conversations.map((c) => ({
      id: c.id,
      key: c.key,
      channel: c.channel,
      sender: c.senderName || c.senderId,
      senderId: c.senderId,
      lastActivity: new Date(c.lastActivity).toISOString(),
      state: conversationState(c.status),
      status: c.status,
      turns: c.turns,
    })),
    // Oldest first; a parked turn's wait for its approvals is not latency.
    latencies: latencies.reverse().map((l) => Math.max(0, Math.round(Number(l.ms) - Number(l.parkedMs)))),
    queue,
    approvals: approvals.map((a) => ({
      code: a.code,
      tool: a.tool,
      tier: a.tier,
      arguments: a.args,
      conversation: a.conversationId,
      conversationKey: keys.get(a.conversationId) ?? null,
      requester: a.requester,
      channel: a.channel,
      createdAt: new Date(a.createdAt).toISOString(),
      expiresAt: new Date(a.expiresAt).toISOString(),
      alwaysPermitted: a.rulePermitted,
      reasons: a.reasons,
      shown: visibleCall(a.args),
    })),
    rules,
    slots,
    health,
    dropped,
    pairing: pairing
      .filter((p) => p.expiresAt && new Date(p.expiresAt) > new Date())
      .map((p) => ({ channel: p.channel, sender: p.sender, code: p.code, expiresAt: new Date(p.expiresAt!).toISOString() })),
  };
}
