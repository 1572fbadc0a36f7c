import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { parseSync } from 'rolldown/experimental';
import { describe, expect, it } from 'vitest';

/**
 * The channel seam: a channel imports the SDK (src/channel/) and the kernel, and nothing else of
 * ours: no core module, no adapter, no guard, nothing of the app. Type imports count (they are
 * how a row or a concrete class leaks in).
 */
const ROOT = resolve(__dirname, '..');
const ALLOWED = [/^src\/channel\//, /^kernel\//];
const FORBIDDEN = /^(src|adapters|moat|app|providers|tools)\//;

/**
 * Imports a channel still needs from outside the SDK, until they go (none left: the
 * webhook deliverer takes safeFetch from the SDK). Each entry must still be needed: the test
 * below fails once one is not, so the list only shrinks.
 */
const PENDING: Record<string, string[]> = {};

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return filesUnder(p);
    return /\.(ts|mts|cts|js|mjs)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

type Node = { type?: string; [k: string]: unknown };
const SOURCE_NODES = new Set(['ImportDeclaration', 'ExportNamedDeclaration', 'ExportAllDeclaration', 'ImportExpression', 'TSImportType']);
const literal = (n: unknown): string | undefined =>
  (n as Node)?.type === 'Literal' && typeof (n as Node).value === 'string' ? ((n as Node).value as string) : undefined;

/**
 * Every module specifier a file names (parsed with oxc, as TypeScript): import/export ... from
 * (type-only ones too), import(), import('x').T, import x = require('x'), require('x').
 */
function specifiers(file: string, text: string): string[] {
  const parsed = parseSync(file, text, { lang: 'ts', sourceType: 'module' });
  if (parsed.errors.length) throw new Error(`${file}: ${parsed.errors[0]!.message}`);
  const out: string[] = [];
  const visit = (n: unknown): void => {
    if (Array.isArray(n)) {
      for (const x of n) visit(x);
      return;
    }
    if (!n || typeof n !== 'object') return;
    const node = n as Node;
    const found =
      (SOURCE_NODES.has(node.type ?? '') && literal(node.source)) ||
      (node.type === 'TSExternalModuleReference' && literal(node.expression)) ||
      (node.type === 'CallExpression' &&
        (node.callee as Node)?.type === 'Identifier' &&
        (node.callee as Node).name === 'require' &&
        literal((node.arguments as unknown[])[0]));
    if (found) out.push(found);
    for (const v of Object.values(node)) if (v && typeof v === 'object') visit(v);
  };
  visit(parsed.program);
  return out;
}

/** Our modules a channel file imports, repo-relative with .ts (packages are not ours). */
function ourImports(abs: string): string[] {
  return specifiers(abs, readFileSync(abs, 'utf8'))
    .filter((s) => s.startsWith('.') || s.startsWith('/'))
    .map((s) => relative(ROOT, resolve(dirname(abs), s)).replace(/\.js$/, '.ts'));
}

function violations(): Array<{ file: string; imports: string }> {
  const out: Array<{ file: string; imports: string }> = [];
  for (const abs of filesUnder(join(ROOT, 'channels'))) {
    const file = relative(ROOT, abs);
    for (const target of ourImports(abs)) {
      if (ALLOWED.some((r) => r.test(target))) continue;
      if (FORBIDDEN.test(target) || !target.startsWith('channels/')) out.push({ file, imports: target });
    }
  }
  return out;
}

describe('the channel boundary', () => {
  it('finds every kind of import, type-only and dynamic ones included', () => {
    const text = [
      "import type { Store } from '../../adapters/store/store.js';",
      "import { x } from '../../src/ingress.js';",
      "export { y } from '../../moat/ssrf.js';",
      "const m = await import('../../app/gateway.js');",
      "type T = import('../../src/config.js').Config;",
      "import z = require('../../tools/registry.js');",
    ].join('\n');
    expect(specifiers('x.ts', text)).toEqual([
      '../../adapters/store/store.js',
      '../../src/ingress.js',
      '../../moat/ssrf.js',
      '../../app/gateway.js',
      '../../src/config.js',
      '../../tools/registry.js',
    ]);
  });

  it('channels import only the channel SDK (src/channel/), the kernel and themselves', () => {
    const found = violations().filter((v) => !PENDING[v.file]?.includes(v.imports));
    expect(found).toEqual([]);
  });

  it('each pending exception is still needed (remove it once its import is gone)', () => {
    const found = violations();
    for (const [file, targets] of Object.entries(PENDING)) {
      for (const t of targets) expect(found, `${file} no longer imports ${t}: drop it from PENDING`).toContainEqual({ file, imports: t });
    }
  });

  it('the SDK itself is not a channel: no channel is imported by src/, adapters/ or kernel/', () => {
    const offenders: string[] = [];
    for (const dir of ['src', 'adapters', 'kernel']) {
      for (const abs of filesUnder(join(ROOT, dir))) {
        for (const t of ourImports(abs)) if (t.startsWith('channels/')) offenders.push(`${relative(ROOT, abs)} -> ${t}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
