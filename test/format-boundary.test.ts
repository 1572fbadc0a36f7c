// A channel's formatting modules (channels/*/format.ts, markdown.ts, split.ts) are pure text
// transforms: neither they nor anything they import, however indirectly, reaches core (src/, app/,
// adapters/) or a platform SDK. So they can be tested, reused and reasoned about on their own (as
// the format module of Vercel's chat SDK Slack adapter is). The import scanner here is separate
// from dependency-cruiser, and errs on the strict side (an import in a comment counts).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const FORMAT_MODULES = ['format.ts', 'markdown.ts', 'split.ts'];
const CORE = /^(src|app|adapters)\//;
const SDK = /^(discord\.js|@discordjs\/|@slack\/|twilio|imapflow|nodemailer|mailparser|ioredis|bullmq|pg|@electric-sql\/)/;

/** Every module specifier in a TypeScript source: import/export ... from, bare import, import(). */
function specifiers(source: string): string[] {
  const found = [...source.matchAll(/\bfrom\s*['"]([^'"]+)['"]|\bimport\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]/g)];
  return found.map((m) => m[1] ?? m[2] ?? m[3]!);
}

/** What a module imports, followed through our own files: repo-relative paths and package names. */
function closure(
  entry: string,
  read = (file: string): string | undefined => (existsSync(join(ROOT, file)) ? readFileSync(join(ROOT, file), 'utf8') : undefined),
) {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const source = read(file);
    if (source === undefined) return; // unresolved: still judged by its path
    for (const spec of specifiers(source)) {
      if (!spec.startsWith('.')) {
        packages.add(spec);
        continue;
      }
      visit(relative(ROOT, resolve(ROOT, dirname(file), spec.replace(/\.js$/, '.ts'))));
    }
  };
  visit(entry);
  files.delete(entry);
  return { files: [...files].sort(), packages: [...packages].sort() };
}

const modules = readdirSync(join(ROOT, 'channels'), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .flatMap((d) => FORMAT_MODULES.map((name) => `channels/${d.name}/${name}`))
  .filter((file) => existsSync(join(ROOT, file)));

describe('formatting modules import neither core nor an SDK', () => {
  it('finds the formatting modules of the channels', () => {
    expect(modules).toEqual(
      expect.arrayContaining(['channels/discord/format.ts', 'channels/slack/format.ts', 'channels/sms/split.ts', 'channels/email/markdown.ts']),
    );
  });

  it.each(modules)('%s', (file) => {
    const { files, packages } = closure(file);
    expect(
      files.filter((f) => CORE.test(f)),
      `${file} reaches core`,
    ).toEqual([]);
    expect(
      packages.filter((p) => SDK.test(p)),
      `${file} reaches an SDK`,
    ).toEqual([]);
  });

  it('follows imports through local files: a helper that imports core counts', () => {
    const tree: Record<string, string> = {
      'channels/x/format.ts': "import { wrap } from './wrap.js';",
      'channels/x/wrap.ts': "import type { Config } from '../../src/config.js';\nimport { Client } from 'discord.js';",
    };
    const { files, packages } = closure('channels/x/format.ts', (file) => tree[file]);
    expect(files).toEqual(['channels/x/wrap.ts', 'src/config.ts']);
    expect(packages).toEqual(['discord.js']);
  });

  it('the scanner sees every form of import, type-only included', () => {
    const source = [
      "import type { Ingress } from '../../src/ingress.js';",
      'import {\n  WebClient,\n} from "@slack/web-api";',
      "export { x } from './split.js';",
      "import './side-effect.js';",
      "const m = await import('discord.js');",
    ].join('\n');
    expect(specifiers(source)).toEqual(['../../src/ingress.js', '@slack/web-api', './split.js', './side-effect.js', 'discord.js']);
  });
});
