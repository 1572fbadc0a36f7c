import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire, Module } from 'node:module';
import { basename, dirname, join } from 'node:path';
import vm from 'node:vm';
import { packageRoot } from './paths.js';

/**
 * Loads a large CommonJS file with V8's code cache (Node 20 has no
 * module.enableCompileCache): the first run compiles it and, once the caller
 * has used it, writes the cache to dist/.code-cache/; later runs skip most of
 * the compiling. The cache is named by the file's path, size and mtime and by
 * the Node version; V8 checks it against its own version and flags and
 * rejects a stale or damaged one, and then the file is compiled as usual and
 * the cache rewritten. Writing is best-effort: a read-only install just
 * compiles every time.
 */
const CACHE_DIR = join(packageRoot, 'dist', '.code-cache');

export interface CachedModule<T> {
  exports: T;
  /** Writes the cache now if it was missing or rejected (call after first use: lazily compiled functions are in it then). */
  save(): void;
}

export function requireWithCodeCache<T>(specifier: string, from: string): CachedModule<T> {
  const file = createRequire(from).resolve(specifier);
  const st = statSync(file);
  const cacheFile = join(CACHE_DIR, `${basename(file)}-${st.size}-${Math.floor(st.mtimeMs)}-${process.version}.bin`);
  let cached: Buffer | undefined;
  try {
    cached = readFileSync(cacheFile);
  } catch {
    cached = undefined;
  }
  const script = new vm.Script(Module.wrap(readFileSync(file, 'utf8')), { filename: file, ...(cached ? { cachedData: cached } : {}) });
  const mod = { exports: {} as T };
  (script.runInThisContext() as (...a: unknown[]) => void).call(mod.exports, mod.exports, createRequire(file), mod, file, dirname(file));
  let pending = !cached || script.cachedDataRejected === true;
  return {
    exports: mod.exports,
    save() {
      if (!pending) return;
      pending = false;
      try {
        mkdirSync(CACHE_DIR, { recursive: true });
        const tmp = `${cacheFile}.${process.pid}`;
        writeFileSync(tmp, script.createCachedData());
        renameSync(tmp, cacheFile); // whole or not at all, for a concurrent reader
      } catch {
        /* read-only install: compile every time */
      }
    },
  };
}
