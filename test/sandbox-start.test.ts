/**
 * A host that cannot sandbox tools: start refuses, saying how to fix it, and
 * doctor says the same; `tools.sandbox: none` starts with a warning instead.
 */
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { doctor } from '../app/doctor.js';
import { Gateway } from '../app/gateway.js';
import { ConfigError } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { testConfig } from './support/gateway.js';

/** A stand-in bwrap that fails the way bubblewrap does in a container without user namespaces. */
function brokenBwrap(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sb-fake-bwrap-'));
  const p = join(dir, 'bwrap');
  writeFileSync(
    p,
    '#!/bin/sh\necho "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces." >&2\nexit 1\n',
  );
  chmodSync(p, 0o755);
  return p;
}

describe('a host that cannot sandbox tools', () => {
  it('start refuses when bubblewrap is missing, naming the key and how to fix it', async () => {
    const cfg = testConfig(null, {}, { tools: { sandbox: { bwrapPath: '/nonexistent/bwrap' } } });
    const err = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger('silent')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/tools\.sandbox/);
    expect((err as Error).message).toMatch(/apt-get install bubblewrap/);
    expect((err as Error).message).toMatch(/SWITCHBOARD_SANDBOX=none/);
  });

  it('start refuses when bubblewrap cannot create namespaces, with its own words, and doctor fails the same check', async () => {
    const bwrap = brokenBwrap();
    const cfg = testConfig(null, {}, { tools: { sandbox: { bwrapPath: bwrap } } });
    const err = await Gateway.start(cfg, { ingress: true, worker: true }, createLogger('silent')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/could not start a sandbox here: bwrap: No permissions to creating new namespace/);
    expect((err as Error).message).toMatch(/allow user namespaces/);
    const report = await doctor(cfg);
    expect(report.checks.find((c) => c.name === 'sandbox')).toMatchObject({
      status: 'fail',
      message: expect.stringMatching(/No permissions to creating new namespace/),
    });
    expect(report.ok).toBe(false);
  });

  it('tools.sandbox: none starts, and says so in the log and in doctor', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'warn' }, new Writable({ write: (chunk, _e, cb) => (lines.push(String(chunk)), cb()) }));
    const cfg = testConfig(null, {}, { tools: { sandbox: 'none' } });
    expect(cfg.tools.sandbox.mode).toBe('none');
    const gw = await Gateway.start(cfg, { ingress: true, worker: true }, log);
    await gw.close();
    expect(lines.join('')).toMatch(/tools\.sandbox is none: shell_exec runs commands as the gateway's own user/);
    expect((await doctor(cfg)).checks.find((c) => c.name === 'sandbox')).toMatchObject({ status: 'warn' });
  });
});
