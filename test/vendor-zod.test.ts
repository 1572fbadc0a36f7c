/**
 * The compiled code's zod (scripts/vendor-zod.mjs, run by npm run build): dist/node_modules/zod is the
 * installed version in one file, with every name the package exports, and it validates as the package
 * does. Needs `npm run build` first.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { packageRoot } from '../kernel/paths.js';

const vendored = join(packageRoot, 'dist', 'node_modules', 'zod');

describe.skipIf(!existsSync(vendored))('the vendored zod of dist/', () => {
  it('is the installed version, with the same exports', () => {
    const pkg = (dir: string) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string };
    expect(pkg(vendored).version).toBe(pkg(join(packageRoot, 'node_modules', 'zod')).version);
    // Both as Node loads them (not through the test runner's module loader).
    const names = (url: string) =>
      JSON.parse(
        spawnSync(process.execPath, ['--input-type=module', '-e', `console.log(JSON.stringify(Object.keys(await import(${JSON.stringify(url)}))))`], {
          encoding: 'utf8',
        }).stdout,
      ) as string[];
    const installed = pathToFileURL(join(packageRoot, 'node_modules', 'zod', 'index.js')).href;
    expect(names(pathToFileURL(join(vendored, 'index.js')).href).sort()).toEqual(names(installed).sort());
  });

  it('is what the compiled code imports, and reports problems as the package does', () => {
    // A process of its own, as the CLI runs: dist/ resolves `zod` to the vendored copy.
    const script = `import { z } from 'zod';
      const r = z.object({ port: z.number().int() }).strict().safeParse({ port: 'x', prot: 1 });
      console.log(JSON.stringify({ url: import.meta.resolve('zod'), issues: r.error.issues.map((i) => [i.code, i.path, i.message]) }));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: join(packageRoot, 'dist', 'app'), encoding: 'utf8' });
    const out = JSON.parse(r.stdout) as { url: string; issues: unknown[] };
    expect(out.url).toBe(pathToFileURL(join(vendored, 'index.js')).href);
    const expected = z.object({ port: z.number().int() }).strict().safeParse({ port: 'x', prot: 1 });
    expect(out.issues).toEqual(expected.error!.issues.map((i) => [i.code, i.path, i.message]));
  });
});
