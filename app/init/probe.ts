import { doctorFromEnv } from '../doctor.js';

const PROVIDER_VARS = ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'SWITCHBOARD_MODEL', 'PATH', 'HOME'];

/**
 * One tiny request to the provider init configured, as `doctor --probe` sends it: the provider's
 * variables only (no configuration file, no Redis or Postgres), so a channel still to fill in does
 * not hide the answer.
 */
export async function probeProvider(env: Record<string, string | undefined>): Promise<{ ok: boolean; ms?: number; slot?: string; error?: string }> {
  const only = Object.fromEntries(PROVIDER_VARS.filter((k) => env[k] !== undefined).map((k) => [k, env[k]]));
  const r = await doctorFromEnv(only, { probe: true });
  const slot = r.slots[0];
  if (!slot) return { ok: false, error: r.checks.find((c) => c.status === 'fail')?.message ?? 'no provider slot is configured' };
  if (!slot.probe) return { ok: false, slot: slot.id, error: 'not probed' };
  return { ok: slot.probe.ok, ms: slot.probe.ms, slot: `${slot.id}: ${slot.api} ${slot.model}`, ...(slot.probe.error ? { error: slot.probe.error } : {}) };
}
