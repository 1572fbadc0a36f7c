/**
 * The CLI's own verbs as a user runs them (`switchboard --version`, `status`) and the gateway's
 * log as an operator reads it: one info line per turn in JSON, one readable line per record
 * when the pretty format is asked for.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../kernel/paths.js';
import { FakeLlm } from './fakes/fake-llm.js';
import { API_KEY, eventually, GatewayProcess, openaiClient } from './support/gateway.js';
import { toolCommandModel } from './support/tool-turns.js';

const OPERATOR_KEY = 'op-cli-fast-key-0001';
const VERSION = (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version;

function cli(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [join(packageRoot, 'bin', 'switchboard.js'), ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function gatewayEnv(fake: FakeLlm, data: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SWITCHBOARD_HTTP_PORT: '0',
    SWITCHBOARD_API_KEYS: API_KEY,
    SWITCHBOARD_OPERATOR_KEYS: OPERATOR_KEY,
    OPENAI_BASE_URL: fake.openaiBaseUrl,
    OPENAI_API_KEY: 'fake',
    SWITCHBOARD_MODEL: 'fake-model',
    SWITCHBOARD_DATA: data,
    SWITCHBOARD_LOG_LEVEL: 'info',
    ...extra,
  };
}

describe('switchboard --version', () => {
  it('prints the version in package.json, as text or JSON, exit 0', () => {
    const flag = cli(['--version']);
    expect(flag.code).toBe(0);
    expect(flag.stdout).toBe(`${VERSION}\n`);
    const verb = cli(['version', '--json']);
    expect(verb.code).toBe(0);
    expect(JSON.parse(verb.stdout)).toEqual({ version: VERSION });
  });
});

describe('switchboard status against nothing', () => {
  it('says so in one line and exits 1', () => {
    const r = cli(['status'], { SWITCHBOARD_URL: 'http://127.0.0.1:9', SWITCHBOARD_OPERATOR_KEY: OPERATOR_KEY });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/no gateway answers at http:\/\/127\.0\.0\.1:9/);
    const json = cli(['status', '--json'], { SWITCHBOARD_URL: 'http://127.0.0.1:9' });
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ url: 'http://127.0.0.1:9', reachable: false });
  });
});

describe('a running gateway: status and the per-turn log line (JSON logs)', () => {
  let fake: FakeLlm;
  let gw: GatewayProcess;
  const data = mkdtempSync(join(tmpdir(), 'sb-cli-fast-'));
  beforeAll(async () => {
    fake = new FakeLlm({ fallback: toolCommandModel });
    await fake.start();
    gw = await GatewayProcess.spawn('start', gatewayEnv(fake, data));
  }, 60_000);
  afterAll(async () => {
    await gw?.kill('SIGTERM');
    await fake?.close();
    rmSync(data, { recursive: true, force: true });
  });

  it('logs one info line when a turn ends: conversation, channel, model slot, tokens, ms, finish reason', async () => {
    const r = await openaiClient(gw.url!, API_KEY, { 'X-Switchboard-Conversation': 'fast-log' }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: 'hello there' }],
    });
    expect(r.choices[0]!.message.content).toBe('nothing to do');
    const line = await gw.waitForLog(/"msg":"turn finished"/, 15_000);
    const rec = JSON.parse(line) as Record<string, unknown>;
    expect(rec).toMatchObject({ level: 30, channel: 'http', slot: 'openai-compatible', finishReason: 'stop' });
    expect(typeof rec.conversation).toBe('string');
    expect(rec.ms).toEqual(expect.any(Number));
    expect((rec.tokens as { total: number }).total).toBeGreaterThan(0);
    expect(gw.logs.filter((l) => l.includes('"msg":"turn finished"'))).toHaveLength(1);
  });

  it('status prints its health and the pending approvals, and --json gives the same', async () => {
    // A write asks an operator at the default autonomy: one approval is pending.
    const r = await openaiClient(gw.url!, API_KEY, { 'X-Switchboard-Conversation': 'fast-approval' }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: 'run: echo hi >> notes.txt' }],
    });
    expect((r as unknown as { switchboard?: { approval?: { code: string } } }).switchboard?.approval?.code).toBeTruthy();

    const human = cli(['status'], { SWITCHBOARD_URL: gw.url!, SWITCHBOARD_OPERATOR_KEY: OPERATOR_KEY });
    expect(human.stderr).toBe('');
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`^${gw.url}: ready \\(embedded\\)`));
    expect(human.stdout).toMatch(/\[ok {2}\] store/);
    expect(human.stdout).toMatch(/\[ok {2}\] provider: openai-compatible: fake-model/);
    expect(human.stdout).toMatch(/queue: \d+ \w+/);
    expect(human.stdout).toMatch(/pending approvals: 1\n/);
    expect(human.stdout).toMatch(/dead deliveries: 0\n/);

    // No SWITCHBOARD_URL: the configured port, and the operator key from SWITCHBOARD_OPERATOR_KEYS.
    const port = new URL(gw.url!).port;
    const json = cli(['status', '--json'], { SWITCHBOARD_HTTP_PORT: port, SWITCHBOARD_OPERATOR_KEYS: OPERATOR_KEY, SWITCHBOARD_DATA: data });
    expect(json.code).toBe(0);
    const s = JSON.parse(json.stdout);
    expect(s).toMatchObject({ url: `http://127.0.0.1:${port}`, ready: true, mode: 'embedded', pendingApprovals: 1, deadDeliveries: 0 });
    expect(s.checks.store).toEqual({ ok: true });
    expect(s.queue).toEqual(expect.objectContaining({ waiting: expect.any(Number) }));

    // A key that is not an operator's sees readiness only.
    const user = cli(['status', '--key', API_KEY], { SWITCHBOARD_URL: gw.url! });
    expect(user.code).toBe(0);
    expect(user.stdout).toMatch(/ready/);
    expect(user.stdout).toMatch(/pending approvals: unknown/);
  });
});

describe('pretty logs (SWITCHBOARD_LOG_FORMAT=pretty)', () => {
  let fake: FakeLlm;
  let gw: GatewayProcess;
  const data = mkdtempSync(join(tmpdir(), 'sb-cli-pretty-'));
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    gw = await GatewayProcess.spawn('start', gatewayEnv(fake, data, { SWITCHBOARD_LOG_FORMAT: 'pretty' }));
  }, 60_000);
  afterAll(async () => {
    await gw?.kill('SIGTERM');
    await fake?.close();
    rmSync(data, { recursive: true, force: true });
  });

  it('writes one readable line per record: time, level, message, fields', async () => {
    const listening = gw.logs.find((l) => l.includes('switchboard is listening'))!;
    const url = /\burl=(\S+)/.exec(listening)?.[1];
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await openaiClient(url!, API_KEY, { 'X-Switchboard-Conversation': 'fast-pretty' }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: 'hello' }],
    });
    const turn = await gw.waitForLog(/ turn finished /, 15_000);
    expect(turn).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}turn finished .*channel=http slot=openai-compatible .*finishReason=stop/);
    expect(turn).toMatch(/ conversation=\S+/);
    // Every line is a record of its own: none is JSON, none is the continuation of another.
    await eventually(async () => gw.logs.length > 2);
    for (const l of gw.logs) expect(l).toMatch(/^\d\d:\d\d:\d\d\.\d{3} (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) \S/);
  });
});
