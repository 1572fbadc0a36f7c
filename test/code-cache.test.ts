/**
 * V8 code cache for large CommonJS files (kernel/code-cache.ts): the cache is
 * written once, reused, and a damaged one is rejected and rewritten without the
 * module loading any differently.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { requireWithCodeCache } from '../kernel/code-cache.js';
import { packageRoot } from '../kernel/paths.js';

const dir = mkdtempSync(join(tmpdir(), 'sb-code-cache-'));
const name = `fixture-${process.pid}-${Date.now()}.cjs`;
const file = join(dir, name);
writeFileSync(file, `exports.twice = (x) => x * 2; exports.dir = __dirname; exports.req = typeof require('node:path').join;\n`);
const cacheDir = join(packageRoot, 'dist', '.code-cache');
const ours = () => {
  try {
    return readdirSync(cacheDir).filter((f) => f.startsWith(name));
  } catch {
    return [];
  }
};

describe('requireWithCodeCache', () => {
  afterAll(() => {
    for (const f of ours()) rmSync(join(cacheDir, f), { force: true });
    rmSync(dir, { recursive: true, force: true });
  });

  it('loads the module as require would, writes the cache once, and survives a damaged cache', () => {
    const first = requireWithCodeCache<{ twice(x: number): number; dir: string; req: string }>(file, import.meta.url);
    expect(first.exports.twice(21)).toBe(42);
    expect(first.exports.dir).toBe(dir);
    expect(first.exports.req).toBe('function');
    first.save();
    expect(ours()).toHaveLength(1);

    const again = requireWithCodeCache<{ twice(x: number): number }>(file, import.meta.url);
    expect(again.exports.twice(2)).toBe(4);

    // Garbage where the cache was: V8 rejects it, the module still loads, and save() rewrites it.
    writeFileSync(join(cacheDir, ours()[0]!), Buffer.from('not a V8 code cache at all'));
    const damaged = requireWithCodeCache<{ twice(x: number): number }>(file, import.meta.url);
    expect(damaged.exports.twice(5)).toBe(10);
    damaged.save();
    expect(ours()).toHaveLength(1);
    expect(requireWithCodeCache<{ twice(x: number): number }>(file, import.meta.url).exports.twice(1)).toBe(2);
  });
});
