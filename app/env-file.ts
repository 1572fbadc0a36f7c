import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { SwitchboardError } from '../kernel/errors.js';

/** A named env file that cannot be read: bad configuration, exit 2 (not src/config's ConfigError: the CLI's entry stays light). */
export class EnvFileError extends SwitchboardError {
  readonly code = 'config_invalid';
}

export interface EnvFileResult {
  /** The file read, absolute; undefined when there was none (or loading is off). */
  path?: string;
  /** The variables it set (the ones the environment did not already have). */
  set: string[];
}

/**
 * Loads `.env` (the file `switchboard init` writes) into the environment before any verb runs:
 * `SWITCHBOARD_ENV_FILE` names another file, `off` turns loading off. A variable already in the
 * environment wins over the file. A missing default `.env` is fine; a missing named one is a
 * configuration error (exit 2).
 */
export function loadEnvFile(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): EnvFileResult {
  const named = env.SWITCHBOARD_ENV_FILE?.trim();
  if (named === 'off') return { set: [] };
  const path = resolve(cwd, named || '.env');
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (!named && (err as NodeJS.ErrnoException).code === 'ENOENT') return { set: [] };
    throw new EnvFileError(`SWITCHBOARD_ENV_FILE: cannot read ${path}: ${(err as Error).message}`);
  }
  const set: string[] = [];
  for (const [name, value] of Object.entries(parseEnv(text))) {
    if (env[name] !== undefined) continue;
    env[name] = value;
    set.push(name);
  }
  return { path, set };
}
