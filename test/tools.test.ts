/** The built-in tools and their guard rails: workspace confinement, shell limits, result capping, web_fetch through the SSRF guard. */

import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { fileTools } from '../tools/builtin/files.js';
import { shellExecTool } from '../tools/builtin/shell.js';
import { runTool, type ToolContext, ToolError } from '../tools/contract.js';
import { capResult } from '../tools/result-cap.js';
import { createSandbox, DEFAULT_LIMITS, type Sandbox } from '../tools/sandbox/index.js';
import { FakeLlm, type FakeRequest, reply, toolCall } from './fakes/fake-llm.js';
import { openaiClient, startGateway, testConfig } from './support/gateway.js';

const ctxFor = (workspace: string): ToolContext => ({ conversationId: 'c1', turnId: 't1', senderId: 'u1', workspace, signal: new AbortController().signal });
const files = fileTools((text) => (/sk-live-[a-z0-9]{20}/.test(text) ? { kinds: ['test_key'] } : null));
const tool = (name: string) => files.find((t) => t.name === name)!;

describe('workspace confinement', () => {
  const outside = mkdtempSync(join(tmpdir(), 'sb-outside-'));
  const ws = mkdtempSync(join(tmpdir(), 'sb-ws-'));
  beforeAll(() => {
    writeFileSync(join(outside, 'secret.txt'), 'TOP SECRET');
    writeFileSync(join(ws, 'hello.txt'), 'hello');
    symlinkSync(outside, join(ws, 'escape'));
    symlinkSync(join(outside, 'secret.txt'), join(ws, 'link.txt'));
    mkdirSync(join(ws, 'sub'));
  });

  it('reads and writes inside', async () => {
    expect((await runTool(tool('file_read'), { path: 'hello.txt' }, ctxFor(ws))).text).toBe('hello');
    await runTool(tool('file_write'), { path: 'sub/new.txt', content: 'made' }, ctxFor(ws));
    expect((await runTool(tool('file_read'), { path: './sub/../sub/new.txt' }, ctxFor(ws))).text).toBe('made');
    await runTool(tool('file_patch'), { path: 'sub/new.txt', find: 'made', replace: 'patched' }, ctxFor(ws));
    expect((await runTool(tool('file_read'), { path: 'sub/new.txt' }, ctxFor(ws))).text).toBe('patched');
    expect((await runTool(tool('file_list'), {}, ctxFor(ws))).text).toContain('sub/new.txt');
  });

  it.each([
    ['../', '../' + 'x'],
    ['climbing out', 'sub/../../etc/passwd'],
    ['absolute', '/etc/passwd'],
    ['home', '~/.ssh/id_rsa'],
    ['symlinked folder', 'escape/secret.txt'],
    ['symlinked file', 'link.txt'],
    ['NUL byte', 'hello.txt\0.png'],
  ])('refuses %s', async (_n, path) => {
    await expect(runTool(tool('file_read'), { path }, ctxFor(ws))).rejects.toThrow(ToolError);
    await expect(runTool(tool('file_write'), { path, content: 'x' }, ctxFor(ws))).rejects.toThrow(/outside|absolute|NUL|symlink/);
  });

  it('patches only UTF-8 text files of bounded size', async () => {
    writeFileSync(join(ws, 'blob.bin'), Buffer.concat([Buffer.alloc(1000, 0xff), Buffer.from('MARK')]));
    await expect(runTool(tool('file_patch'), { path: 'blob.bin', find: 'MARK', replace: 'X' }, ctxFor(ws))).rejects.toThrow(/not UTF-8 text/);
    writeFileSync(join(ws, 'big.txt'), 'a'.repeat(2 * 1024 * 1024) + 'MARK');
    await expect(runTool(tool('file_patch'), { path: 'big.txt', find: 'MARK', replace: 'X' }, ctxFor(ws))).rejects.toThrow(/larger than/);
  });

  it('refuses to write secrets into files', async () => {
    await expect(runTool(tool('file_write'), { path: 'cfg.txt', content: 'key=sk-live-abcdefghijklmnopqrst' }, ctxFor(ws))).rejects.toThrow(/secret/);
  });
});

describe.each(['bwrap', 'none'] as const)('shell_exec (sandbox %s)', (mode) => {
  const ws = mkdtempSync(join(tmpdir(), 'sb-sh-'));
  let sandbox: Sandbox;
  let shellExec: ReturnType<typeof shellExecTool>;
  beforeAll(async () => {
    sandbox = await createSandbox({ mode, network: 'none', limits: DEFAULT_LIMITS, uid: 65534, gid: 65534 });
    shellExec = shellExecTool(sandbox);
  });
  afterAll(() => sandbox?.close());
  it('runs in the workspace with a scrubbed environment', async () => {
    process.env.SB_TEST_SECRET = 'do-not-leak';
    const out = await runTool(shellExec, { command: 'pwd; echo "secret=[$SB_TEST_SECRET]"; echo home=$HOME; echo made > made.txt' }, ctxFor(ws));
    expect(out.text).toContain(mode === 'bwrap' ? '/workspace' : ws);
    expect(out.text).toContain('secret=[]');
    expect(out.text).toContain('[exit code 0]');
    expect(readFileSync(join(ws, 'made.txt'), 'utf8')).toBe('made\n');
  });
  it('times out and kills the whole process group', async () => {
    const t0 = Date.now();
    await expect(runTool(shellExec, { command: 'sleep 30 & sleep 30', timeoutSeconds: 1 }, ctxFor(ws))).rejects.toThrow(/timed out after 1 s/);
    expect(Date.now() - t0).toBeLessThan(5_000);
  });
  it('caps the output', async () => {
    const out = await runTool(shellExec, { command: 'yes 0123456789 | head -c 200000' }, ctxFor(ws));
    expect(Buffer.byteLength(out.text)).toBeLessThan(70_000);
    expect(out.text).toMatch(/more bytes of output dropped/);
  });
  it('reports a failing command with its exit code', async () => {
    expect((await runTool(shellExec, { command: 'ls /nonexistent-dir' }, ctxFor(ws))).text).toMatch(/\[exit code 2\]/);
  });
});

describe('result capping', () => {
  it('drops whole rows from JSON arrays, counts them, and keeps valid JSON', () => {
    const rows = Array.from({ length: 500 }, (_, i) => ({ id: i, name: `row ${i}`, tags: ['a', 'b'], note: 'x'.repeat(40) }));
    const capped = capResult(JSON.stringify({ total: 500, rows }), 4_000, 'page with tool_result_page');
    expect(Buffer.byteLength(capped.text)).toBeLessThanOrEqual(4_000);
    const parsed = JSON.parse(capped.text) as { truncated: boolean; omittedRows: Record<string, number>; result: { total: number; rows: typeof rows } };
    expect(parsed.truncated).toBe(true);
    expect(parsed.result.total).toBe(500);
    const kept = parsed.result.rows;
    expect(kept.length + parsed.omittedRows['$.rows']!).toBe(500);
    kept.forEach((r, i) => expect(r).toEqual(rows[i])); // every retained row intact
  });
  it('cuts plain text at a line boundary and says how much is missing', () => {
    const text = Array.from({ length: 1000 }, (_, i) => `line ${i}`).join('\n');
    const capped = capResult(text, 500);
    expect(Buffer.byteLength(capped.text)).toBeLessThanOrEqual(500);
    expect(capped.text).toMatch(/line \d+\n\[… \d+ more bytes not shown\]$/);
  });
  it('leaves small results alone', () => {
    expect(capResult('{"a":1}', 100)).toMatchObject({ text: '{"a":1}', truncated: false });
  });
});

describe('web_fetch through a tool call from the model', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  let secret: Server;
  let hits = 0;
  beforeAll(async () => {
    secret = createServer((_q, s) => {
      hits++;
      s.end('internal secrets');
    });
    await new Promise<void>((r) => secret.listen(0, '127.0.0.1', r));
    const port = (secret.address() as { port: number }).port;
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req: FakeRequest) => {
      const msgs = req.body.messages as Array<{ role: string; content: unknown }>;
      const last = msgs[msgs.length - 1]!;
      if (last.role === 'tool') return reply(`fetch result: ${String(last.content).replace(/\s+/g, ' ').slice(0, 400)}`);
      return toolCall('web_fetch', { url: `http://127.0.0.1:${port}/admin` });
    });
    gw = await startGateway(testConfig(fake, {}));
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
    secret?.close();
  });

  it('refuses a private target end to end, and the private server is never contacted', async () => {
    const r = await openaiClient(gw.url!).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: 'fetch the admin page at the local url' }],
    });
    expect(r.choices[0]!.message.content).toMatch(/refused by the SSRF guard/);
    expect(r.choices[0]!.message.content).toMatch(/untrusted/); // tool output reaches the model marked untrusted
    expect(hits).toBe(0);
  });
});
