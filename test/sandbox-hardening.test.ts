/**
 * The sandbox against what a red-team review found: descriptors the gateway
 * inherited, the kernel keyring shared by every sandbox, a writable /tmp, the
 * egress proxy's connections outliving the call, and a spawn that fails.
 */
import { spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../kernel/paths.js';
import { EgressProxy, MAX_EGRESS_CONNECTIONS } from '../tools/sandbox/egress-proxy.js';
import { createSandbox, DEFAULT_LIMITS, type Sandbox } from '../tools/sandbox/index.js';
import { runCaptured } from '../tools/sandbox/run-captured.js';

const signal = new AbortController().signal;

describe('sandbox hardening', () => {
  let sandbox: Sandbox;
  let ws: string;
  beforeAll(async () => {
    sandbox = await createSandbox({ mode: 'bwrap', network: 'none', limits: DEFAULT_LIMITS, uid: 65534, gid: 65534 });
    ws = mkdtempSync(join(tmpdir(), 'sb-harden-'));
    if (sandbox.owner) chownSync(ws, sandbox.owner.uid, sandbox.owner.gid);
  });
  afterAll(() => sandbox?.close());
  const run = (command: string) => sandbox.exec({ command, workspace: ws, timeoutMs: 20_000, signal, maxOutputBytes: 65536 });

  it('closes every descriptor the gateway inherited before the command runs', () => {
    // A gateway started with a descriptor of the host's root open as fd 9 (a supervisor's leak, say).
    const script = `
      const { createSandbox, DEFAULT_LIMITS } = await import(${JSON.stringify(join(packageRoot, 'dist/tools/sandbox/index.js'))});
      const { chownSync, mkdtempSync } = await import('node:fs');
      const sb = await createSandbox({ mode: 'bwrap', network: 'none', limits: DEFAULT_LIMITS, uid: 65534, gid: 65534 });
      const ws = mkdtempSync('/tmp/sb-fd-');
      if (sb.owner) chownSync(ws, sb.owner.uid, sb.owner.gid);
      const r = await sb.exec({ command: 'test -e /proc/$$/fd/9 && echo "fd 9 open" || echo "fd 9 closed"; ls /proc/self/fd/9/ 2>&1 | head -1; cat <&9 2>&1 | head -1', workspace: ws, timeoutMs: 20000, signal: new AbortController().signal, maxOutputBytes: 65536 });
      console.log(r.output);
      await sb.close();`;
    const r = spawnSync('bash', ['-c', 'exec 9</; exec "$0" --input-type=module -e "$1"', process.execPath, script], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe('fd 9 closed');
    expect(r.stdout).toMatch(/No such file or directory|Bad file descriptor/);
    expect(r.stdout).not.toMatch(/\b(usr|etc|root)\b/);
  });

  it.runIf(process.arch === 'x64')('denies the kernel keyring calls (a channel between conversations)', async () => {
    // keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0) and add_key: both refused.
    const r = await run(
      `perl -e '$r = syscall(250, 0, -4, 0); print $r < 0 ? "keyctl denied: $!\\n" : "keyctl allowed\\n"; my ($t, $d, $v) = ("user", "k", "v"); $r = syscall(248, $t, $d, $v, 1, -4); print $r < 0 ? "add_key denied: $!\\n" : "add_key allowed\\n"'`,
    );
    expect(r.output).toContain('keyctl denied: Operation not permitted');
    expect(r.output).toContain('add_key denied: Operation not permitted');
  });

  it('gives the command a writable private /tmp', async () => {
    const r = await run('echo hi > /tmp/x && cat /tmp/x && mktemp');
    expect(r.code).toBe(0);
    expect(r.output).toMatch(/^hi\n\/tmp\/tmp\./);
  });

  it('reports a program that cannot be started as a rejection, not a crash', async () => {
    await expect(runCaptured({ file: '/nonexistent/program', args: [], env: {}, timeoutMs: 1000, signal, maxOutputBytes: 10 })).rejects.toThrow(/ENOENT/);
  });
});

describe('the egress proxy', () => {
  let proxy: EgressProxy;
  let hanging: Server;
  let open = 0;
  let port = 0;
  beforeAll(async () => {
    // An upstream that takes connections and never answers (it sends headers, then nothing).
    hanging = createServer((_q, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
    });
    hanging.on('connection', (s) => {
      open++;
      s.on('close', () => open--);
    });
    await new Promise<void>((r) => hanging.listen(0, '127.0.0.2', r));
    port = (hanging.address() as { port: number }).port;
    proxy = await EgressProxy.start({ allowCidrs: ['127.0.0.2/32'] });
  });
  afterAll(async () => {
    await proxy?.close();
    hanging?.closeAllConnections();
    hanging?.close();
  });

  const viaProxy = (request: string) =>
    new Promise<Socket>((resolve, reject) => {
      const s = connect(proxy.socketPath, () => {
        s.write(request);
        resolve(s);
      });
      s.on('error', reject);
    });
  const settle = (pred: () => boolean) =>
    new Promise<void>((resolve, reject) => {
      const t0 = Date.now();
      const tick = () => (pred() ? resolve() : Date.now() - t0 > 10_000 ? reject(new Error(`still ${open} upstream connections open`)) : setTimeout(tick, 50));
      tick();
    });

  it('closes the upstream when the sandbox side goes away (CONNECT and plain HTTP)', async () => {
    const clients: Socket[] = [];
    for (let i = 0; i < 10; i++) clients.push(await viaProxy(`CONNECT 127.0.0.2:${port} HTTP/1.1\r\nHost: 127.0.0.2:${port}\r\n\r\n`));
    for (let i = 0; i < 10; i++) clients.push(await viaProxy(`GET http://127.0.0.2:${port}/slow HTTP/1.1\r\nHost: 127.0.0.2:${port}\r\n\r\n`));
    await settle(() => open === 20);
    for (const c of clients) c.destroy();
    await settle(() => open === 0);
  });

  it(`takes at most ${MAX_EGRESS_CONNECTIONS} connections at once`, async () => {
    const clients: Socket[] = [];
    let closedByProxy = 0;
    for (let i = 0; i < MAX_EGRESS_CONNECTIONS + 20; i++) {
      const s = connect(proxy.socketPath);
      s.on('error', () => {});
      s.on('close', () => closedByProxy++);
      clients.push(s);
    }
    await settle(() => closedByProxy >= 20);
    expect(closedByProxy).toBeLessThanOrEqual(20 + 2);
    for (const c of clients) c.destroy();
  });
});
