import { existsSync } from 'node:fs';
import { openPostgres } from '../adapters/db/pg.js';
import { createRedis } from '../adapters/redis.js';
import { providerFromConfig, providerStatus } from '../providers/from-env.js';
import type { ProviderStatus } from '../providers/slot.js';
import { maskConfig, type Config } from './config.js';
import { infraMode, pgliteDir } from './infra.js';

export interface DoctorCheck {
  name: string;
  status: 'ok' | 'warn' | 'fail';
  message: string;
}

export interface DoctorReport {
  mode: string;
  config: unknown;
  provider: ProviderStatus;
  checks: DoctorCheck[];
  ok: boolean;
}

/** Checks what a gateway started with this configuration would stand on. */
export async function doctor(cfg: Config): Promise<DoctorReport> {
  const checks: DoctorCheck[] = [];
  let mode = 'unknown';
  try {
    mode = infraMode(cfg);
  } catch (err) {
    checks.push({ name: 'mode', status: 'fail', message: (err as Error).message });
  }
  const { slot, reason } = providerFromConfig(cfg.provider);
  const provider = providerStatus(slot ? [slot] : [], reason);
  checks.push(
    provider.configured
      ? { name: 'provider', status: 'ok', message: provider.slots.map((s) => `${s.id}: ${s.api} ${s.model} at ${s.baseUrl}`).join('; ') }
      : { name: 'provider', status: 'fail', message: reason ?? 'no model provider is configured' },
  );
  if (cfg.redisUrl) {
    const r = createRedis(cfg.redisUrl, { maxRetriesPerRequest: 1, retryStrategy: () => null, lazyConnect: true });
    try {
      await r.connect();
      const info = await r.info('server');
      const version = /redis_version:(\S+)/.exec(info)?.[1];
      checks.push({ name: 'redis', status: 'ok', message: `reachable, version ${version}` });
    } catch (err) {
      checks.push({ name: 'redis', status: 'fail', message: `cannot reach ${maskConfigUrl(cfg.redisUrl)}: ${(err as Error).message}` });
    } finally {
      r.disconnect();
    }
  }
  if (cfg.databaseUrl) {
    try {
      const db = await openPostgres(cfg.databaseUrl, { max: 1 });
      const v = await db.query<{ v: string }>('show server_version');
      const m = await db.query<{ n: number }>(`select count(*)::int as n from information_schema.tables where table_name = 'schema_migrations'`);
      checks.push({ name: 'postgres', status: 'ok', message: `reachable, version ${v.rows[0]?.v}${m.rows[0]?.n ? '' : ' (not migrated yet: run switchboard migrate)'}` });
      await db.close();
    } catch (err) {
      checks.push({ name: 'postgres', status: 'fail', message: `cannot reach ${maskConfigUrl(cfg.databaseUrl)}: ${(err as Error).message}` });
    }
  } else {
    const dir = pgliteDir(cfg);
    checks.push({ name: 'pglite', status: 'ok', message: existsSync(dir) ? `data in ${dir}` : `will create ${dir} on first start` });
  }
  const keys = cfg.http.apiKeys.length;
  checks.push(
    keys > 0
      ? { name: 'http-auth', status: 'ok', message: `${keys} API key(s) configured` }
      : cfg.http.openAccess
        ? { name: 'http-auth', status: 'warn', message: 'open access: the API answers without a key' }
        : { name: 'http-auth', status: 'warn', message: 'no API keys configured (SWITCHBOARD_API_KEYS): every API request will be refused' },
  );
  return { mode, config: maskConfig(cfg), provider, checks, ok: checks.every((c) => c.status !== 'fail') };
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
    'effective configuration (secrets masked):',
    JSON.stringify(r.config, null, 2),
  ].join('\n');
}
