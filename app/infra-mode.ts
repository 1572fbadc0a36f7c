import { join, resolve } from 'node:path';
import { type Config, ConfigError } from '../src/config.js';

/*
 * Which infrastructure a configuration runs on, and where the embedded database lives: what the
 * configuration check and doctor need, apart from app/infra.ts (which loads every adapter: BullMQ,
 * ioredis, pg, PGlite).
 */

export type InfraMode = 'embedded' | 'postgres' | 'redis+postgres';

export function infraMode(cfg: Pick<Config, 'redisUrl' | 'databaseUrl'>): InfraMode {
  if (cfg.redisUrl && !cfg.databaseUrl)
    throw new ConfigError(
      'invalid configuration at "databaseUrl" (DATABASE_URL): REDIS_URL is set, so DATABASE_URL must be too (PGlite cannot be shared between processes)',
    );
  if (cfg.redisUrl) return 'redis+postgres';
  return cfg.databaseUrl ? 'postgres' : 'embedded';
}

export function pgliteDir(cfg: Pick<Config, 'dataDir'>): string {
  return join(resolve(cfg.dataDir), 'pglite');
}
