/**
 * No silent catch (issue #20): a failure is logged with context, or ignored on purpose through
 * ignoreError(reason) (kernel/errors.ts), or, in a plain try/catch, with a comment saying why.
 * This scans the source folders for catches and error listeners whose body is empty.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FOLDERS = ['kernel', 'src', 'app', 'adapters', 'providers', 'tools', 'moat', 'channels'];

const HANDLER = String.raw`(?:\([^()]*\)|[A-Za-z_$][\w$]*)\s*=>\s*(?:\{\s*\}|undefined|void 0)|function\s*[\w$]*\s*\([^()]*\)\s*\{\s*\}`;
const SILENT: Array<[string, RegExp]> = [
  ['empty .catch handler', new RegExp(String.raw`\.catch\(\s*(?:${HANDLER})\s*\)`, 'g')],
  ['empty catch block', /\bcatch\s*(?:\([^()]*\))?\s*\{\s*\}/g],
  ['empty error listener', new RegExp(String.raw`\.(?:on|once|addListener)\(\s*['"]error['"]\s*,\s*(?:${HANDLER})\s*\)`, 'g')],
];

/** Every silent catch in `text`, as "kind at line N". */
function silentCatches(text: string): string[] {
  const found: string[] = [];
  for (const [kind, re] of SILENT) {
    for (const m of text.matchAll(re)) found.push(`${kind} at line ${text.slice(0, m.index).split('\n').length}`);
  }
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sourceFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

describe('no empty catch', () => {
  it('finds a deliberately empty catch of each kind, and accepts a logged or named one', () => {
    const bad = [
      'await pool.end().catch(() => {});',
      'p.catch((err) => { });',
      'p.catch(e => undefined);',
      'p.catch(function () {});',
      'try { x(); } catch {}',
      'try {\n  x();\n} catch (e) {\n}',
      "redis.on('error', () => {});",
      "w.once('error', (_e) => {});",
    ];
    for (const line of bad) expect(silentCatches(line), line).toHaveLength(1);
    const fine = [
      "await pool.end().catch(ignoreError('the open error is what is reported'));",
      "p.catch((err: unknown) => log.warn({ err }, 'could not renew the lease'));",
      'try { x(); } catch {\n  /* unparseable: pg failed on it already */\n}',
      "redis.on('error', (err) => sink.warn({ err }, 'redis error'));",
      'const r = await fetch(url).catch(() => null);',
    ];
    for (const line of fine) expect(silentCatches(line), line).toEqual([]);
  });

  it('the source folders have none', () => {
    const found = FOLDERS.flatMap((f) =>
      sourceFiles(join(ROOT, f)).flatMap((file) => silentCatches(readFileSync(file, 'utf8')).map((w) => `${relative(ROOT, file)}: ${w}`)),
    );
    expect(found).toEqual([]);
  });
});
