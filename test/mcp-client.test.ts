import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { type JsonTool, type ToolContext, ToolError } from '../tools/contract.js';
import { McpManager } from '../tools/mcp/client.js';
import { type McpServerConfig, mcpConfigSchema, mcpServerSchema } from '../tools/mcp/config.js';
import { type FakeMcpHttp, freePort, startFakeMcpHttp } from './fakes/mcp-servers.js';

const STDIO_SERVER = fileURLToPath(new URL('./fakes/mcp-stdio-server.mjs', import.meta.url));

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => {});
});

async function http(opts: Parameters<typeof startFakeMcpHttp>[0] = {}): Promise<FakeMcpHttp> {
  const s = await startFakeMcpHttp(opts);
  cleanups.push(() => s.close());
  return s;
}

function manager(servers: Array<Record<string, unknown>>, opts: ConstructorParameters<typeof McpManager>[1] = {}): McpManager {
  const parsed: McpServerConfig[] = servers.map((s) => mcpServerSchema.parse(s));
  const m = new McpManager(parsed, { retry: { initialMs: 50, maxMs: 200 }, ...opts });
  cleanups.push(() => m.close());
  m.start();
  return m;
}

function ctx(signal: AbortSignal = new AbortController().signal): ToolContext {
  return { conversationId: 'c1', turnId: 't1', senderId: 'u1', workspace: '/tmp', signal };
}

function tool(m: McpManager, name: string): JsonTool {
  const t = m.tools().find((x) => x.name === name);
  if (!t)
    throw new Error(
      `no tool ${name}; have ${m
        .tools()
        .map((x) => x.name)
        .join(', ')}`,
    );
  return t;
}

async function text(t: JsonTool, args: unknown = {}, signal?: AbortSignal): Promise<string> {
  const out = await t.execute(args, ctx(signal));
  return typeof out === 'string' ? out : out.text;
}

async function waitFor(cond: () => boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const state = (m: McpManager, name: string) => m.status().find((s) => s.name === name)!;

describe('mcp config', () => {
  it('needs a command for stdio and a url for http, and defaults servers to []', () => {
    expect(mcpConfigSchema.parse(undefined)).toEqual({ servers: [] });
    expect(() => mcpServerSchema.parse({ name: 'a', transport: 'stdio' })).toThrow(/command/);
    expect(() => mcpServerSchema.parse({ name: 'a', transport: 'http' })).toThrow(/url/);
    expect(() => mcpServerSchema.parse({ name: 'a b', transport: 'http', url: 'http://x' })).toThrow();
    expect(() => mcpServerSchema.parse({ name: 'a', transport: 'http', url: 'http://x', bogus: 1 })).toThrow();
    const s = mcpServerSchema.parse({ name: 'a', transport: 'http', url: 'http://127.0.0.1/mcp' });
    expect(s).toMatchObject({ trustWriteTools: false, trusted: false, connectTimeoutMs: 10_000, callTimeoutMs: 60_000, envAllow: [], env: {}, args: [] });
    expect(() => mcpConfigSchema.parse({ servers: [s, s] })).toThrow(/unique/);
  });
});

describe('McpManager over HTTP', () => {
  it('namespaces tools per server, offers only read-only tools unless trusted, and renders results', async () => {
    const a = await http();
    const b = await http();
    const m = manager([
      { name: 'alpha', transport: 'http', url: a.url },
      { name: 'beta', transport: 'http', url: b.url, trustWriteTools: true, trusted: true },
    ]);
    await m.ready();
    expect(m.status()).toEqual([
      { name: 'alpha', state: 'connected', tools: 4 },
      { name: 'beta', state: 'connected', tools: 6 },
    ]);

    const names = m
      .tools()
      .map((t) => t.name)
      .sort();
    expect(names.filter((n) => n.startsWith('alpha__'))).toEqual(['alpha__fail', 'alpha__hang', 'alpha__lookup', 'alpha__media']);
    expect(names.filter((n) => n.startsWith('beta__'))).toEqual([
      'beta__delete_all',
      'beta__fail',
      'beta__hang',
      'beta__lookup',
      'beta__media',
      'beta__write_note',
    ]);

    const lookup = tool(m, 'alpha__lookup');
    // alpha is not trusted: its readOnlyHint is only its own claim, so the call is treated as mutating.
    expect(lookup).toMatchObject({ effect: 'write', effectFromThirdParty: true, toolset: 'mcp:alpha', description: '[alpha] Looks a word up' });
    expect(lookup.parameters).toMatchObject({ type: 'object', properties: { q: { type: 'string' } }, required: ['q'] });
    expect(lookup.parameters).not.toHaveProperty('$schema');
    expect(tool(m, 'beta__write_note')).toMatchObject({ effect: 'write', toolset: 'mcp:beta', description: '[beta] Writes a note' });
    expect(tool(m, 'beta__delete_all').effect).toBe('write');
    expect(tool(m, 'beta__lookup').effect).toBe('read');

    expect(await text(lookup, { q: 'cat' })).toBe('found:cat');
    expect(await text(tool(m, 'beta__lookup'), { q: 'dog' })).toBe('found:dog');
    expect(await text(tool(m, 'beta__write_note'), { text: 'hi' })).toBe('noted:hi');
    expect(await text(tool(m, 'alpha__media'))).toBe('caption\n[image]');

    await expect(tool(m, 'alpha__fail').execute({}, ctx())).rejects.toThrow(ToolError);
    await expect(tool(m, 'alpha__fail').execute({}, ctx())).rejects.toThrow(/boom/);
    // Bad arguments come back from the server as isError → ToolError, not a crash.
    await expect(lookup.execute({ q: 42 }, ctx())).rejects.toThrow(ToolError);
    expect(state(m, 'alpha').state).toBe('connected');
  });

  it('rejects a wrong bearer token (401) and a missing token variable without affecting other servers', async () => {
    const s = await http({ token: 'right-token' });
    const m = manager(
      [
        { name: 'good', transport: 'http', url: s.url, bearerTokenEnv: 'GOOD_TOKEN' },
        { name: 'bad', transport: 'http', url: s.url, bearerTokenEnv: 'BAD_TOKEN' },
        { name: 'missing', transport: 'http', url: s.url, bearerTokenEnv: 'NO_SUCH_TOKEN' },
        { name: 'none', transport: 'http', url: s.url },
      ],
      { env: { GOOD_TOKEN: 'right-token', BAD_TOKEN: 'wrong-token' } },
    );
    await m.ready();
    expect(state(m, 'good')).toMatchObject({ state: 'connected', tools: 4 });
    const bad = state(m, 'bad');
    expect(bad.state === 'failed' || bad.state === 'connecting').toBe(true);
    expect(bad.lastError).toMatch(/401/);
    expect(bad.lastError).not.toContain('wrong-token');
    expect(state(m, 'missing').lastError).toMatch(/NO_SUCH_TOKEN.*not set/);
    expect(state(m, 'none').lastError).toMatch(/401/);
    expect(m.tools().every((t) => t.name.startsWith('good__'))).toBe(true);
    expect(await text(tool(m, 'good__lookup'), { q: 'x' })).toBe('found:x');
  });

  it('times out a hanging call within callTimeoutMs, honours ctx.signal, and stays usable', async () => {
    const s = await http();
    const m = manager([{ name: 'slow', transport: 'http', url: s.url, callTimeoutMs: 300 }]);
    await m.ready();
    const hang = tool(m, 'slow__hang');
    expect(hang.timeoutMs).toBe(300);

    let t0 = Date.now();
    await expect(hang.execute({}, ctx())).rejects.toThrow(/timed out after 300 ms/);
    expect(Date.now() - t0).toBeLessThan(2_000);

    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    t0 = Date.now();
    const aborted = hang.execute({}, ctx(ac.signal));
    await expect(aborted).rejects.toThrow(ToolError);
    await expect(aborted).rejects.toThrow(/aborted/);
    expect(Date.now() - t0).toBeLessThan(250);

    expect(state(m, 'slow').state).toBe('connected');
    expect(await text(tool(m, 'slow__lookup'), { q: 'still' })).toBe('found:still');
  });

  it('retries a server that is down at start and picks it up once it comes up', async () => {
    const port = await freePort();
    const m = manager([{ name: 'late', transport: 'http', url: `http://127.0.0.1:${port}/mcp` }]);
    await m.ready();
    const st = state(m, 'late');
    expect(st.state).toBe('failed');
    expect(st.lastError).toBeTruthy();
    expect(st.retryInMs).toBeGreaterThanOrEqual(0);
    expect(m.tools()).toEqual([]);

    await new Promise((r) => setTimeout(r, 300)); // a few failed retries first
    await http({ port });
    await waitFor(() => state(m, 'late').state === 'connected', 5_000, 'late server to connect');
    expect(state(m, 'late')).toEqual({ name: 'late', state: 'connected', tools: 4 });
    expect(await text(tool(m, 'late__lookup'), { q: 'up' })).toBe('found:up');
  });

  it('fails fast when a server went away, then reconnects when it is back', async () => {
    const first = await http();
    const port = first.port;
    const m = manager([{ name: 'flaky', transport: 'http', url: first.url }], { pingIntervalMs: 0 });
    await m.ready();
    const lookup = tool(m, 'flaky__lookup');
    await first.close();

    const t0 = Date.now();
    await expect(lookup.execute({ q: 'a' }, ctx())).rejects.toThrow(ToolError);
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(state(m, 'flaky').state).not.toBe('connected');
    // The stale tool object now fails immediately.
    await expect(lookup.execute({ q: 'a' }, ctx())).rejects.toThrow(/not connected/);
    expect(m.tools()).toEqual([]);

    await http({ port });
    await waitFor(() => state(m, 'flaky').state === 'connected', 5_000, 'reconnect');
    expect(await text(tool(m, 'flaky__lookup'), { q: 'b' })).toBe('found:b');
  });

  it('notices a dead server through the liveness ping', async () => {
    const s = await http();
    const m = manager([{ name: 'pinged', transport: 'http', url: s.url }], { pingIntervalMs: 50 });
    await m.ready();
    expect(state(m, 'pinged').state).toBe('connected');
    await s.close();
    await waitFor(() => state(m, 'pinged').state !== 'connected', 5_000, 'ping to notice');
    expect(m.tools()).toEqual([]);
  });

  it('refreshes the tool list on notifications/tools/list_changed', async () => {
    const s = await http({ stateful: true });
    const m = manager([{ name: 'live', transport: 'http', url: s.url }]);
    await m.ready();
    expect(state(m, 'live')).toMatchObject({ state: 'connected', tools: 4 });
    // The client opens its GET SSE stream after initialisation; notifications travel on it.
    await waitFor(() => (s.requests.GET ?? 0) > 0, 5_000, 'GET SSE stream');
    await new Promise((r) => setTimeout(r, 100));
    s.addTool('extra');
    await waitFor(() => m.tools().some((t) => t.name === 'live__extra'), 5_000, 'list_changed refresh');
    expect(state(m, 'live').tools).toBe(5);
    expect(await text(tool(m, 'live__extra'))).toBe('extra:extra');
  });
});

describe('McpManager over stdio', () => {
  it('runs a stdio server that sees only the allowed environment', async () => {
    process.env.MCP_TEST_SECRET = 'hunter2';
    process.env.MCP_TEST_ALLOWED = 'ok';
    cleanups.push(async () => {
      delete process.env.MCP_TEST_SECRET;
      delete process.env.MCP_TEST_ALLOWED;
    });
    const m = manager([
      {
        name: 'local',
        transport: 'stdio',
        command: process.execPath,
        args: [STDIO_SERVER],
        envAllow: ['MCP_TEST_ALLOWED'],
        env: { MCP_TEST_LITERAL: 'lit' },
        trusted: true,
      },
    ]);
    await m.ready();
    expect(state(m, 'local')).toMatchObject({ state: 'connected', tools: 4 });
    expect(tool(m, 'local__echo')).toMatchObject({ description: '[local] Echoes its text', effect: 'read', toolset: 'mcp:local' });
    expect(await text(tool(m, 'local__echo'), { text: 'hi' })).toBe('echo:hi');

    const keys = JSON.parse(await text(tool(m, 'local__env_keys'))) as string[];
    expect(keys).toContain('MCP_TEST_ALLOWED');
    expect(keys).toContain('MCP_TEST_LITERAL');
    expect(keys).toContain('PATH');
    expect(keys).not.toContain('MCP_TEST_SECRET');
    const allowed = new Set([
      'MCP_TEST_ALLOWED',
      'MCP_TEST_LITERAL',
      'PATH',
      'HOME',
      'USER',
      'LOGNAME',
      'SHELL',
      'TERM',
      'LANG',
      'LANGUAGE',
      'LC_ALL',
      'LC_CTYPE',
      'TZ',
      'TMPDIR',
    ]);
    // Node/the OS may add a few of its own (none carry parent secrets).
    expect(keys.filter((k) => !allowed.has(k) && !k.startsWith('__CF') && k !== 'COLOR')).toEqual([]);
  });

  it('reconnects a stdio server whose process exited', async () => {
    const m = manager([{ name: 'proc', transport: 'stdio', command: process.execPath, args: [STDIO_SERVER] }]);
    await m.ready();
    const pid1 = await text(tool(m, 'proc__pid'));
    expect(await text(tool(m, 'proc__crash'))).toBe('bye');
    await waitFor(() => state(m, 'proc').state !== 'connected', 5_000, 'exit noticed');
    await waitFor(() => state(m, 'proc').state === 'connected', 5_000, 'reconnect');
    const pid2 = await text(tool(m, 'proc__pid'));
    expect(pid2).not.toBe(pid1);
  });

  it('fails a stdio server whose command does not exist, without blocking the others', async () => {
    const s = await http();
    const m = manager([
      { name: 'ghost', transport: 'stdio', command: '/nonexistent/mcp-server' },
      { name: 'real', transport: 'http', url: s.url },
    ]);
    await m.ready();
    expect(state(m, 'ghost').state).toBe('failed');
    expect(state(m, 'ghost').lastError).toMatch(/ENOENT/);
    expect(state(m, 'real').state).toBe('connected');
    await m.close();
    expect(m.status().every((x) => x.state === 'closed')).toBe(true);
    expect(m.tools()).toEqual([]);
  });
});
