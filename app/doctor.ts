import { existsSync } from 'node:fs';
import { providerStatus } from '../providers/from-env.js';
import type { ProviderSlot, ProviderStatus } from '../providers/slot.js';
import { type Config, ConfigError, maskConfig, problemLine } from '../src/config.js';
import { type CheckedProblem, checkConfiguration, checkSlices, type SliceChecks } from './config-check.js';
import { infraMode, pgliteDir } from './infra-mode.js';

// What only some checks need (Redis, Postgres, the probe's request path, the sandbox) is imported by
// those checks: doctor on an embedded configuration loads neither ioredis nor pg nor the agent loop.

export interface DoctorCheck {
  name: string;
  status: 'ok' | 'warn' | 'fail';
  message: string;
  /** For a configuration problem: the key, its environment variable, the closest allowed name. */
  key?: string;
  env?: string;
  suggestion?: string;
}

/** A failing check for a problem of the configuration. */
function problemCheck(p: CheckedProblem): DoctorCheck {
  return {
    name: p.check,
    status: 'fail',
    message: problemLine(p),
    ...(p.path ? { key: p.path } : {}),
    ...(p.env ? { env: p.env } : {}),
    ...(p.suggestion ? { suggestion: p.suggestion } : {}),
  };
}

/**
 * Doctor from the environment as start reads it: a configuration start would refuse is a report
 * with every problem as a failing check (ok: false), not an exception.
 */
export async function doctorFromEnv(env: Record<string, string | undefined> = process.env, opts: { probe?: boolean } = {}): Promise<DoctorReport> {
  let checked: Awaited<ReturnType<typeof checkConfiguration>>;
  try {
    checked = await checkConfiguration(env, { parseOnly: true });
  } catch (err) {
    // A file that cannot be read or parsed: nothing else can be checked.
    if (!(err instanceof ConfigError)) throw err;
    const checks = err.problems.map((p) => problemCheck({ ...p, check: 'config' }));
    return { mode: 'unknown', config: null, provider: providerStatus([], 'the configuration is invalid'), slots: [], checks, ok: false };
  }
  if (!checked.config) {
    // The schema refused part of it: every problem, the other slices' checks included.
    const checks = checked.problems.map(problemCheck);
    return { mode: 'unknown', config: null, provider: providerStatus([], 'the configuration is invalid'), slots: [], checks, ok: false };
  }
  // The checks across slices just ran on this configuration: doctor() reuses them.
  return doctor(checked.config, { ...opts, env, checked });
}

export interface SlotReport {
  id: string;
  api: string;
  model: string;
  baseUrl: string;
  keyEnv?: string;
  keyPresent: boolean;
  /** Shared cooldown state (Redis mode only: embedded cooldowns live inside the gateway process). */
  cooldown?: { cooling: boolean; until: string | null; strikes: number; reason?: string };
  /** With --probe: one tiny request. */
  probe?: { ok: boolean; ms: number; error?: string; class?: string };
}

export interface DoctorReport {
  mode: string;
  config: unknown;
  provider: ProviderStatus;
  slots: SlotReport[];
  checks: DoctorCheck[];
  ok: boolean;
}

/** Checks what a gateway started with this configuration would stand on. */
export async function doctor(
  cfg: Config,
  opts: { probe?: boolean; env?: Record<string, string | undefined>; checked?: SliceChecks } = {},
): Promise<DoctorReport> {
  const checks: DoctorCheck[] = [];
  let mode = 'unknown';
  try {
    mode = infraMode(cfg);
  } catch {
    /* a failing check from checkSlices below */
  }
  const env = opts.env ?? process.env;
  // The checks start makes across slices (app/config-check.ts): slots, slot references, channels, the operator channel.
  // (The HTTP API is only parsed: it has no probe, and its listener is start's business.)
  const checked = opts.checked ?? (await checkSlices(cfg, env, [], { parseOnly: true }));
  const { reason, channels, problems } = checked;
  const slotProblems = problems.filter((p) => p.check === 'provider');
  // With a broken slot there is no chain (start refuses): nothing to report or probe.
  const slots = slotProblems.length ? [] : checked.slots;
  const provider = providerStatus(slots, slotProblems.length ? problemLine(slotProblems[0]!) : reason);
  if (!slotProblems.length) {
    checks.push(
      provider.configured
        ? { name: 'provider', status: 'ok', message: provider.slots.map((s) => `${s.id}: ${s.api} ${s.model} at ${s.baseUrl}`).join('; ') }
        : { name: 'provider', status: 'fail', message: reason ?? 'no model provider is configured' },
    );
  }
  checks.push(...problems.map(problemCheck));
  const channelErrors = problems.some((p) => p.check.startsWith('channel '));
  // The always-on ones (the HTTP API) are not news.
  const named = channels.filter((c) => !c.builtin);
  if (named.length) checks.push({ name: 'channels', status: channelErrors ? 'warn' : 'ok', message: `configured: ${named.map((c) => c.name).join(', ')}` });
  const slotReports: SlotReport[] = provider.slots.map((s) => ({ ...s }));
  // The checks that wait on something (Redis, Postgres, the providers, the platforms, bubblewrap) do not
  // depend on one another: they run at once, and their results are listed in the same order as ever.
  const [, slotProbes, platformProbes, redis, store, sandbox] = await Promise.all([
    cfg.redisUrl && slots.length ? cooldownStates(cfg.redisUrl, cfg.queue.prefix, slotReports) : undefined,
    opts.probe ? probeSlots(cfg, slots, slotReports) : [],
    opts.probe ? probePlatforms(cfg, channels, env) : [],
    cfg.redisUrl ? redisCheck(cfg.redisUrl) : undefined,
    storeCheck(cfg),
    sandboxCheck(cfg),
  ]);
  checks.push(...slotProbes, ...platformProbes);
  if (redis) checks.push(redis);
  checks.push(store);
  const keys = cfg.http.apiKeys.length;
  checks.push(
    keys > 0
      ? { name: 'http-auth', status: 'ok', message: `${keys} API key(s) configured` }
      : cfg.http.openAccess
        ? { name: 'http-auth', status: 'warn', message: 'open access: the API answers without a key' }
        : { name: 'http-auth', status: 'warn', message: 'no API keys configured (SWITCHBOARD_API_KEYS): every API request will be refused' },
  );
  checks.push(sandbox);
  return { mode, config: maskConfig(cfg), provider, slots: slotReports, checks, ok: checks.every((c) => c.status !== 'fail') };
}

/** The shared cooldown state of each slot (Redis mode), written into its report; an unreachable Redis is the redis check's to report. */
async function cooldownStates(redisUrl: string, prefix: string, slotReports: SlotReport[]): Promise<void> {
  const { RedisCooldowns } = await import('../adapters/cooldowns/redis.js');
  const cd = new RedisCooldowns(redisUrl, prefix);
  try {
    const states = await withTimeout(cd.get(slotReports.map((s) => s.id)), 3_000);
    const now = Date.now();
    for (const r of slotReports) {
      const st = states.get(r.id)!;
      r.cooldown = {
        cooling: st.until > now,
        until: st.until > now ? new Date(st.until).toISOString() : null,
        strikes: st.strikes,
        ...(st.reason ? { reason: st.reason } : {}),
      };
    }
  } catch {
    /* the redis check reports the connection */
  } finally {
    await cd.close();
  }
}

/** --probe: one tiny request to each slot, all at once; each result in its slot's report and as a check, in slot order. */
async function probeSlots(cfg: Config, slots: ProviderSlot[], slotReports: SlotReport[]): Promise<DoctorCheck[]> {
  const [{ MemoryCooldowns }, { Redactor }, { FallbackChain }, { classifyError }, { sendToProvider }] = await Promise.all([
    import('../adapters/cooldowns/memory.js'),
    import('../moat/secrets.js'),
    import('../providers/chain.js'),
    import('../providers/errors.js'),
    import('../src/provider-request.js'),
  ]);
  return Promise.all(
    slots.map(async (slot, i): Promise<DoctorCheck> => {
      const t0 = Date.now();
      // The slot alone, one attempt, no busy retries; through the request builder like every request.
      const t = cfg.fallback.timeouts;
      const probe = new FallbackChain([slot], new MemoryCooldowns(), {
        ...cfg.fallback,
        busyRetryMs: 0,
        busyNoticeMs: Number.MAX_SAFE_INTEGER,
        timeouts: { ...t, totalMs: Math.min(t.totalMs, 20_000) },
      });
      let cls: string | undefined;
      const m = await sendToProvider(
        probe,
        { messages: [{ role: 'user', content: 'Reply with the single word: ok', timestamp: Date.now() }] },
        { redactor: new Redactor(), policy: 'redact', options: { maxTokens: 16 }, hooks: { onAttempt: (a) => void (a.error !== 'ok' && (cls = a.error)) } },
      ).result();
      const ok = m.stopReason !== 'error' && m.stopReason !== 'aborted';
      cls ??= classifyError(m);
      slotReports[i]!.probe = { ok, ms: Date.now() - t0, ...(ok ? {} : { error: m.errorMessage ?? 'failed', class: cls }) };
      return { name: `probe ${slot.id}`, status: ok ? 'ok' : 'fail', message: ok ? `answered in ${Date.now() - t0} ms` : `${cls}: ${m.errorMessage}` };
    }),
  );
}

/** --probe: each channel's tokens and endpoints against its platform, then the gateway itself if one runs. */
async function probePlatforms(cfg: Config, channels: SliceChecks['channels'], env: Record<string, string | undefined>): Promise<DoctorCheck[]> {
  const [probed, gateway] = await Promise.all([
    Promise.all(channels.filter((c) => c.probe).map(async (c) => ({ name: c.name, results: await c.probe!() }))),
    gatewayCheck(cfg, env),
  ]);
  const checks: DoctorCheck[] = [];
  for (const p of probed)
    for (const r of p.results) checks.push({ name: `probe ${p.name} ${r.name}`, status: r.ok ? (r.warn ? 'warn' : 'ok') : 'fail', message: r.message });
  return [...checks, gateway];
}

async function redisCheck(redisUrl: string): Promise<DoctorCheck> {
  const { createRedis } = await import('../adapters/redis.js');
  const r = createRedis(redisUrl, { maxRetriesPerRequest: 1, retryStrategy: () => null, lazyConnect: true });
  try {
    await r.connect();
    const info = await r.info('server');
    const version = /redis_version:(\S+)/.exec(info)?.[1];
    return { name: 'redis', status: 'ok', message: `reachable, version ${version}` };
  } catch (err) {
    return { name: 'redis', status: 'fail', message: `cannot reach ${maskConfigUrl(redisUrl)}: ${(err as Error).message}` };
  } finally {
    r.disconnect();
  }
}

/**
 * Postgres: connects and asks its version and whether it is migrated. The embedded store (PGlite) is
 * not started (its WASM database is what start pays for): its data folder is reported.
 */
async function storeCheck(cfg: Config): Promise<DoctorCheck> {
  if (!cfg.databaseUrl) {
    const dir = pgliteDir(cfg);
    return { name: 'pglite', status: 'ok', message: existsSync(dir) ? `data in ${dir}` : `will create ${dir} on first start` };
  }
  try {
    const { openPostgres } = await import('../adapters/db/pg.js');
    const db = await openPostgres(cfg.databaseUrl, { max: 1 });
    const v = await db.query<{ v: string }>('show server_version');
    const m = await db.query<{ n: number }>(`select count(*)::int as n from information_schema.tables where table_name = 'schema_migrations'`);
    await db.close();
    return {
      name: 'postgres',
      status: 'ok',
      message: `reachable, version ${v.rows[0]?.v}${m.rows[0]?.n ? '' : ' (not migrated yet: run switchboard migrate)'}`,
    };
  } catch (err) {
    return { name: 'postgres', status: 'fail', message: `cannot reach ${maskConfigUrl(cfg.databaseUrl)}: ${(err as Error).message}` };
  }
}

/**
 * doctor --probe: a running gateway's /readyz (SWITCHBOARD_URL, else http.host:http.port), with the
 * operator key when there is one so its checks are shown. Nothing answering is a warning (not
 * started yet); a gateway that answers not ready is a failure, with its failing checks.
 */
async function gatewayCheck(cfg: Config, env: Record<string, string | undefined>): Promise<DoctorCheck> {
  const host = cfg.http.host === '0.0.0.0' || cfg.http.host === '::' ? '127.0.0.1' : cfg.http.host;
  const url = (env.SWITCHBOARD_URL ?? `http://${host.includes(':') ? `[${host}]` : host}:${cfg.http.port}`).replace(/\/+$/, '');
  const key = env.SWITCHBOARD_OPERATOR_KEY ?? cfg.http.operatorKeys[0];
  try {
    const r = await fetch(`${url}/readyz`, { ...(key ? { headers: { authorization: `Bearer ${key}` } } : {}), signal: AbortSignal.timeout(3_000) });
    const body = (await r.json().catch(() => ({}))) as { checks?: Record<string, { ok?: boolean; message?: string; error?: string } | boolean> };
    if (r.status === 200) return { name: 'gateway', status: 'ok', message: `${url} is ready` };
    const failing = Object.entries(body.checks ?? {})
      .filter(([, v]) => (typeof v === 'boolean' ? !v : v.ok === false))
      .map(([k, v]) => (typeof v === 'object' && (v.message ?? v.error) ? `${k} (${v.message ?? v.error})` : k));
    return { name: 'gateway', status: 'fail', message: `${url} answers ${r.status}: not ready${failing.length ? `: ${failing.join(', ')}` : ''}` };
  } catch (err) {
    return { name: 'gateway', status: 'warn', message: `no gateway answers at ${url} (${(err as Error).message}); start one, or set SWITCHBOARD_URL` };
  }
}

/** The same probe start runs: doctor says fail exactly when start would refuse. */
async function sandboxCheck(cfg: Config): Promise<DoctorCheck> {
  const c = cfg.tools.sandbox;
  if (c.mode === 'none')
    return {
      name: 'sandbox',
      status: 'warn',
      message: "tools.sandbox is none: shell_exec runs commands as the gateway's own user, with access to everything that user can read",
    };
  const { createSandbox, SandboxUnavailableError, sandboxOptions } = await import('../tools/sandbox/index.js');
  try {
    const sandbox = await createSandbox(sandboxOptions(c));
    await sandbox.close();
    return {
      name: 'sandbox',
      status: 'ok',
      message: `bubblewrap works here; network ${c.network}${c.network === 'egress' ? ' (through the SSRF-guarded proxy)' : ''}`,
    };
  } catch (err) {
    if (!(err instanceof SandboxUnavailableError)) throw err;
    return { name: 'sandbox', status: 'fail', message: err.message };
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error('timeout')), ms).unref())]);
}

function maskConfigUrl(u: string): string {
  return u.replace(/\/\/([^:/@]*):([^@]*)@/, '//$1:****@');
}

export function formatDoctor(r: DoctorReport): string {
  const icon = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' } as const;
  return [
    `mode: ${r.mode}`,
    ...r.checks.map((c) => `[${icon[c.status]}] ${c.name}: ${c.message}`),
    '',
    'provider slots (fallback order):',
    ...(r.slots.length ? r.slots : []).map(
      (s, i) =>
        `  ${i + 1}. ${s.id}: ${s.api} ${s.model} at ${s.baseUrl}; key ${s.keyPresent ? 'present' : 'MISSING'}${s.keyEnv ? ` (${s.keyEnv})` : ''}` +
        (s.cooldown
          ? s.cooldown.cooling
            ? `; cooling until ${s.cooldown.until} after ${s.cooldown.strikes} failure(s) (${s.cooldown.reason})`
            : '; not cooling'
          : ''),
    ),
    '',
    'effective configuration (secrets masked):',
    JSON.stringify(r.config, null, 2),
  ].join('\n');
}
