import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root, found from this file whether it runs from source (tests) or dist/. */
function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'prompts'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error('switchboard: cannot find the package root (package.json + prompts/)');
    dir = up;
  }
}

export const packageRoot = findRoot();
export const migrationsDir = join(packageRoot, 'adapters', 'store', 'migrations');
export const promptsDir = join(packageRoot, 'prompts');
