// The layering and cycle checks of `npm run lint` fail on a deliberately wrong import.
// A copy of the source layers gets probe files with wrong imports; the exact command of
// `npm run lint:layers` (with the known-violations baseline) then runs on the copy. The
// untouched copy passes, so each failure below is the probe's doing.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const LAYERS = ['kernel', 'adapters', 'providers', 'moat', 'tools', 'src', 'channels', 'app'];
const DEPCRUISE = join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');

/** The arguments `npm run lint:layers` gives depcruise. */
function lintLayersArgs(): string[] {
  const script: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts['lint:layers'];
  const [bin, ...args] = script.split(/\s+/);
  expect(bin).toBe('depcruise');
  return args;
}

function copyOfTheTree(): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-layering-'));
  for (const layer of LAYERS) cpSync(join(ROOT, layer), join(dir, layer), { recursive: true });
  for (const file of ['package.json', '.dependency-cruiser.cjs', '.dependency-cruiser-known-violations.json']) cpSync(join(ROOT, file), join(dir, file));
  // A symlink, as in a git worktree: the package rules must still see node_modules/<name>.
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

function lintLayers(dir: string): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [DEPCRUISE, ...lintLayersArgs()], { cwd: dir, encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

const PROBES: Record<string, string> = {
  // Type-only imports count.
  'kernel/__probe.ts': "import type { Config } from '../src/config.js';\nexport type Probe = Config;\n",
  'kernel/__cycle-a.ts': "import type { B } from './__cycle-b.js';\nexport type A = { b?: B };\n",
  'kernel/__cycle-b.ts': "import type { A } from './__cycle-a.js';\nexport type B = { a?: A };\n",
  'channels/sms/__probe.ts': "import { Ingress } from '../../src/ingress.js';\nexport const probe = Ingress;\n",
  'channels/sms/__other-channel.ts': "export * from '../slack/format.js';\n",
  'src/channel/__probe.ts': "import type { Client } from 'discord.js';\nexport type Probe = Client;\n",
  'src/__probe.ts': "import { createGateway } from '../app/gateway.js';\nexport const probe = createGateway;\n",
  'channels/email/format.ts': "import { Ingress } from '../../src/ingress.js';\nexport const probe = Ingress;\n",
};

describe('the layering check (npm run lint:layers)', () => {
  let clean: string;
  let probed: string;
  let result: { status: number | null; out: string };

  beforeAll(() => {
    clean = copyOfTheTree();
    probed = copyOfTheTree();
    for (const [file, text] of Object.entries(PROBES)) writeFileSync(join(probed, file), text);
    result = lintLayers(probed);
  });
  afterAll(() => {
    for (const dir of [clean, probed]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('passes on the tree as it is (its known violations are the baseline)', () => {
    const r = lintLayers(clean);
    expect(r.out).toMatch(/no dependency violations found/);
    expect(r.status).toBe(0);
  });

  it('fails once a wrong import is added', () => {
    expect(result.status).not.toBe(0);
    expect(result.out).toMatch(/\d+ dependency violations/);
  });

  it.each([
    ['kernel-imports-nothing', 'kernel/__probe.ts', 'src/config.ts'],
    ['no-circular', 'kernel/__cycle-a.ts', 'kernel/__cycle-b.ts → kernel/__cycle-a.ts'],
    ['channel-imports-only-sdk-and-kernel', 'channels/sms/__probe.ts', 'src/ingress.ts'],
    ['channel-not-to-other-channel', 'channels/sms/__other-channel.ts', 'channels/slack/format.ts'],
    ['channel-sdk-imports-no-platform-sdk', 'src/channel/__probe.ts', 'node_modules/discord.js/'],
    ['discord-sdk-only-in-channels-discord', 'src/channel/__probe.ts', 'node_modules/discord.js/'],
    ['nothing-imports-app', 'src/__probe.ts', 'app/gateway.ts'],
    ['core-not-to-app-or-channels', 'src/__probe.ts', 'app/gateway.ts'],
    ['format-module-imports-no-core-or-sdk', 'channels/email/format.ts', 'src/ingress.ts'],
  ])('names the rule %s for %s → %s', (rule, from, to) => {
    // A cycle is printed over several lines, one module a line: read the arrows as one line.
    const report = result.out.replace(/\s*→\s*/g, ' → ');
    expect(report, result.out).toContain(`error ${rule}: ${from} → ${to}`);
  });
});
