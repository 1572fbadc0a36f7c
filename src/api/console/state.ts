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
  const [conversations, latencies, queue, approvals, slots, pairing, rules, health] = await Promise.all([
    infra.store.repos.console.recentConversations(30),
    infra.store.repos.console.turnLatencies(60),
    infra.queue.counts().catch(() => null),
    infra.approvals.pending(),
    deps.chain ? deps.chain.health().catch(() => []) : Promise.resolve([]),
    infra.access.list('pending'),
    infra.approvals.rules().then((r) => rulesJson(r, infra.store)),
    deps.health().catch((err: unknown) => ({ ready: false, error: (err as Error).message })),
  ]);
  const keys = new Map<string, string | undefined>();
  for (const a of approvals) if (!keys.has(a.conversation_id)) keys.set(a.conversation_id, (await infra.store.conversation(a.conversation_id))?.key);
  return {
    now: new Date().toISOString(),
    conversations: conversations.map((c) => ({
      id: c.id,
      key: c.key,
      channel: c.channel,
      sender: c.sender_name || c.sender_id,
      senderId: c.sender_id,
      lastActivity: new Date(c.last_activity).toISOString(),
      state: conversationState(c.status),
      status: c.status,
      turns: c.turns,
    })),
    // Oldest first; a parked turn's wait for its approvals is not latency.
    latencies: latencies.reverse().map((l) => Math.max(0, Math.round(Number(l.ms) - Number(l.parked_ms)))),
    queue,
    approvals: approvals.map((a) => ({
      code: a.code,
      tool: a.tool,
      tier: a.tier,
      arguments: a.args,
      conversation: a.conversation_id,
      conversationKey: keys.get(a.conversation_id) ?? null,
      requester: a.requester,
      channel: a.channel,
      createdAt: new Date(a.created_at).toISOString(),
      expiresAt: new Date(a.expires_at).toISOString(),
      alwaysPermitted: a.rule_permitted,
      reasons: a.reasons,
      shown: visibleCall(a.args),
    })),
    rules,
    slots,
    health,
    pairing: pairing
      .filter((p) => p.expires_at && new Date(p.expires_at) > new Date())
      .map((p) => ({ channel: p.channel, sender: p.sender, code: p.code, expiresAt: new Date(p.expires_at!).toISOString() })),
  };
}
