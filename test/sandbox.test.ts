/**
 * The execution boundary, attacked through the HTTP API as a hostile user (or
 * an injected model) would: the fake model issues the tool calls, an operator
 * who approves everything answers every approval, and the sandbox alone must
 * keep the gateway's secrets, its data folder, other workspaces, the host and
 * loopback services out of reach.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { workspaceFor } from '../tools/workspace.js';
import { FakeLlm } from './fakes/fake-llm.js';
import { API_KEY, startGateway, testConfig } from './support/gateway.js';
import { toolCommandModel, toolResultOf } from './support/tool-turns.js';

const OPERATOR_KEY = 'op-key-sandbox-01';
// Planted in the gateway's own environment; no secret pattern, so only the sandbox can keep it out of tool output.
const PLANTED = 'planted-marker-5f1c9e';

/** Sends the message, an operator approving whatever is asked, and returns what the tool gave the model. */
const toolResult = (gw: Gateway, fake: FakeLlm, conversation: string, text: string) =>
  toolResultOf(gw, fake, { conversation, text, approveWith: OPERATOR_KEY });

/** A gateway whose operator approves everything, with the given sandbox: the sandbox alone must hold. */
const permissive = (fake: FakeLlm, sandbox: Record<string, unknown>) =>
  startGateway(testConfig(fake, {}, { http: { operatorKeys: [OPERATOR_KEY] }, approvals: { autonomy: 'trusted', timeoutMs: 60_000 }, tools: { sandbox } }));

describe('the tool sandbox (bwrap) through the HTTP API', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  let service: Server;
  let servicePort = 0;
  let serviceHits = 0;

  beforeAll(async () => {
    process.env.SB_PLANTED_SECRET = PLANTED;
    service = createServer((_q, s) => {
      serviceHits++;
      s.end('internal service');
    });
    await new Promise<void>((r) => service.listen(0, '127.0.0.1', r));
    servicePort = (service.address() as { port: number }).port;
    fake = new FakeLlm();
    await fake.start();
    fake.respond(toolCommandModel);
    gw = await permissive(fake, { mode: 'bwrap', cpuSeconds: 2, memoryMb: 64, processes: 64 });
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
    service?.close();
    delete process.env.SB_PLANTED_SECRET;
  });

  const toolSays = (conversation: string, text: string) => toolResult(gw, fake, conversation, text);
  const workspaceOf = async (conversation: string) => {
    const conv = (await gw.infra.store.db.query<{ id: string }>(`select id from conversations where key like $1`, [`%/${conversation}/%`])).rows[0]!;
    return workspaceFor(gw.config.dataDir, conv.id);
  };

  it('runs commands in the workspace, as its own user, in its own namespaces', async () => {
    const out = await toolSays('sbx-basic', 'run: pwd; id -u; hostname; ls /proc | grep -c "^[0-9]"; echo hello > hello.txt');
    expect(out).toContain('/workspace');
    expect(out).not.toMatch(/^0$/m); // not root
    expect(out).toContain('sandbox');
    expect(out).toContain('[exit code 0]');
    expect(readFileSync(join(await workspaceOf('sbx-basic'), 'hello.txt'), 'utf8')).toBe('hello\n');
  });

  it("cannot read the gateway's environment, whatever it tries", async () => {
    const out = await toolSays(
      'sbx-env',
      'run: env; for f in /proc/*/environ /proc/$PPID/environ /proc/1/environ; do tr "\\0" "\\n" < "$f" | sed "s/./& /g"; done; cat /proc/1/cmdline; echo END',
    );
    expect(out).toContain('END');
    expect(out).toContain('PATH='); // it did print its own environment
    expect(out.replace(/\s/g, '')).not.toContain(PLANTED);
    expect(out).not.toContain(API_KEY);
    expect(out).not.toContain('fake-key'); // the provider key
    expect(out).not.toContain(OPERATOR_KEY);
  });

  it("cannot reach the data folder, other workspaces or the host's home", async () => {
    await toolSays('sbx-victim', 'run: echo victim-private-notes > notes.txt');
    const victim = await workspaceOf('sbx-victim');
    const dataDir = gw.config.dataDir;
    const out = await toolSays(
      'sbx-attacker',
      `run: ls -la ${dataDir} ${victim} /root /home 2>&1; cat ${victim}/notes.txt 2>&1; ls /workspace/.. 2>&1; grep -rs victim-private /tmp /var /etc 2>/dev/null | head -3; echo END`,
    );
    expect(out).toContain('END');
    expect(out).not.toContain('victim-private-notes');
    expect(out).not.toContain('pglite');
    expect(out).toMatch(/No such file or directory/);
  });

  it('cannot reach loopback services', async () => {
    const out = await toolSays(
      'sbx-net',
      `run: (exec 3<>/dev/tcp/127.0.0.1/${servicePort}) 2>&1 && echo CONNECTED; (exec 3<>/dev/tcp/127.0.0.1/${new URL(gw.url!).port}) 2>&1 && echo CONNECTED; echo END`,
    );
    expect(out).toContain('END');
    expect(out).not.toContain('CONNECTED');
    expect(serviceHits).toBe(0);
  });

  it('leaves nothing running after the call (setsid, nohup, double fork)', async () => {
    const out = await toolSays('sbx-detach', 'run: (setsid sleep 4201 &); nohup sleep 4202 >/dev/null 2>&1 & disown; (sleep 4203 & ) ; echo started');
    expect(out).toContain('started');
    await new Promise((r) => setTimeout(r, 300));
    const left = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => /sleep 420[123]/.test(l));
    expect(left).toEqual([]);
  });

  it('shows NUL bytes in output escaped, and the turn (and its tool) runs once', async () => {
    const out = await toolSays('sbx-nul', 'run: echo ran >> runs.txt; printf "a\\0b\\n"');
    expect(out).toContain('a\\0b');
    expect(readFileSync(join(await workspaceOf('sbx-nul'), 'runs.txt'), 'utf8')).toBe('ran\n');
  });

  it('stops a CPU hog and a memory hog at their limits', async () => {
    const cpu = await toolSays('sbx-cpu', 'run: while :; do :; done');
    expect(cpu).toMatch(/CPU time limit/);
    const mem = await toolSays('sbx-mem', 'run: head -c 300000000 /dev/zero | tail > /dev/null; echo "tail exit $?"');
    expect(mem).toMatch(/memory exhausted|Cannot allocate/);
    expect(mem).toMatch(/tail exit [1-9]/);
  });

  it('cannot write outside the workspace, with the shell or the file tools', async () => {
    const marker = `sbx-escape-${process.pid}`;
    const out = await toolSays(
      'sbx-write',
      `run: echo x > /usr/${marker}; echo x > /etc/${marker}; echo x > /${marker}; echo x > /tmp/${marker} && echo tmp-ok; ln -s ${tmpdir()} hostlink; ln -s /etc etclink; echo END`,
    );
    expect(out).toContain('END');
    expect(out).toContain('tmp-ok'); // its own /tmp is writable
    expect(out).toMatch(/Read-only file system|Permission denied/);
    expect(existsSync(`/usr/${marker}`) || existsSync(`/etc/${marker}`) || existsSync(`/${marker}`)).toBe(false);
    expect(readdirSync(tmpdir()).filter((f) => f.includes(marker))).toEqual([]); // the sandbox's /tmp is its own
    // A symlink the command planted does not lead the file tools out either.
    const w = await toolSays('sbx-write', `write: hostlink/${marker}|pwned`);
    expect(w).toMatch(/symlink/);
    expect(existsSync(join(tmpdir(), marker))).toBe(false);
    const r = await toolSays('sbx-write', 'read: etclink/hostname');
    expect(r).toMatch(/symlink/);
  });
});

describe('the tool sandbox with network egress through the SSRF-guarded proxy', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  let allowed: Server;
  let internal: Server;
  let internalHits = 0;
  const port = (s: Server) => (s.address() as { port: number }).port;

  beforeAll(async () => {
    allowed = createServer((q, s) => s.end(`allowed service saw ${q.url}`));
    internal = createServer((_q, s) => {
      internalHits++;
      s.end('internal service');
    });
    // 127.0.0.2 stands for an operator-allowed host (allowCidrs); 127.0.0.1 for everything the guard refuses.
    await new Promise<void>((r) => allowed.listen(0, '127.0.0.2', r));
    await new Promise<void>((r) => internal.listen(0, '127.0.0.1', r));
    fake = new FakeLlm();
    await fake.start();
    fake.respond(toolCommandModel);
    gw = await permissive(fake, { mode: 'bwrap', network: 'egress', allowCidrs: ['127.0.0.2/32'] });
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
    allowed?.close();
    internal?.close();
  });

  it('reaches an allowed host through the proxy, and nothing else', async () => {
    const out = await toolResult(
      gw,
      fake,
      'egress-1',
      `run: curl -sS --max-time 5 http://127.0.0.2:${port(allowed)}/hello; echo; ` +
        `curl -sS --max-time 5 http://127.0.0.1:${port(internal)}/ ; echo; ` +
        `curl -sS --max-time 5 https://127.0.0.1:${port(internal)}/ 2>&1; echo; ` +
        `curl -sS --max-time 5 --noproxy '*' http://127.0.0.2:${port(allowed)}/direct 2>&1; echo; ` +
        `curl -sS --max-time 5 http://169.254.169.254/latest/meta-data/ 2>&1; echo END`,
    );
    expect(out).toContain('allowed service saw /hello');
    expect(out).toMatch(/switchboard egress proxy: refused http:\/\/127\.0\.0\.1/);
    expect(out).toMatch(/CONNECT|403|refused/);
    expect(out).not.toContain('allowed service saw /direct'); // no way around the proxy
    expect(out).toContain('END');
    expect(internalHits).toBe(0);
  });
});
