import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import OpenAI from 'openai';
import { Gateway, type Roles } from '../../app/gateway.js';
import { packageRoot } from '../../kernel/paths.js';
import { type Config, configSchema } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import type { FakeLlm } from '../fakes/fake-llm.js';

export const API_KEY = 'sk-test-key-0001';
export const OTHER_KEY = 'sk-test-key-0002';
/** An operator key every test gateway accepts unless a test sets its own: /readyz shows its checks only to operators. */
export const TEST_OPERATOR_KEY = 'op-test-key-readyz-0001';

export interface Backend {
  redisUrl?: string;
  databaseUrl?: string;
}

/** A validated config for tests: a fake LLM as the provider, fast queue timings, quiet logs. */
export function testConfig(fake: FakeLlm | null, backend: Backend, patch: Record<string, unknown> = {}): Config {
  const raw: Record<string, unknown> = {
    dataDir: mkdtempSync(join(tmpdir(), 'sb-data-')),
    http: { port: 0, apiKeys: [API_KEY, OTHER_KEY], operatorKeys: [TEST_OPERATOR_KEY] },
    provider: fake ? { openaiBaseUrl: fake.openaiBaseUrl, openaiApiKey: 'fake-key', model: 'fake-model' } : {},
    queue: {
      prefix: `sbt${Math.random().toString(36).slice(2, 8)}`,
      lockDurationMs: 3_000,
      stalledIntervalMs: 1_000,
      backoffMs: 100,
      recoverAfterMs: 2_000,
      recoverIntervalMs: 1_000,
    },
    log: { level: process.env.SWITCHBOARD_TEST_LOG ?? 'silent' },
    ...(backend.redisUrl ? { redisUrl: backend.redisUrl } : {}),
    ...(backend.databaseUrl ? { databaseUrl: backend.databaseUrl } : {}),
  };
  for (const [k, v] of Object.entries(patch)) {
    raw[k] = v && typeof v === 'object' && !Array.isArray(v) && raw[k] && typeof raw[k] === 'object' ? { ...(raw[k] as object), ...(v as object) } : v;
  }
  return configSchema.parse(raw);
}

export async function startGateway(cfg: Config, roles: Roles = { ingress: true, worker: true }): Promise<Gateway> {
  return Gateway.start(cfg, roles, createLogger(cfg.log.level));
}

/** GET /readyz as an operator (anyone else gets only { ready }). */
export function readyz(baseUrl: string, key = TEST_OPERATOR_KEY): Promise<Response> {
  return fetch(`${baseUrl}/readyz`, { headers: { authorization: `Bearer ${key}` } });
}

export function openaiClient(baseUrl: string, apiKey = API_KEY, headers: Record<string, string> = {}): OpenAI {
  return new OpenAI({ apiKey, baseURL: `${baseUrl}/v1`, maxRetries: 0, timeout: 30_000, defaultHeaders: headers });
}

/** A gateway as its own OS process (`node bin/switchboard.js <role>`), for crash tests. */
export class GatewayProcess {
  readonly logs: string[] = [];
  url?: string;
  private exited: Promise<number | null>;

  private constructor(readonly proc: ChildProcess) {
    this.exited = new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
    for (const stream of [proc.stdout!, proc.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        this.logs.push(line);
        if (!this.url && line.includes('switchboard is listening')) {
          try {
            this.url = (JSON.parse(line) as { url: string }).url;
          } catch {
            /* not JSON */
          }
        }
      });
    }
  }

  static async spawn(
    role: 'start' | 'ingress' | 'worker',
    env: Record<string, string>,
    opts: { cwd?: string; startTimeoutMs?: number } = {},
  ): Promise<GatewayProcess> {
    const proc = spawn(process.execPath, [join(packageRoot, 'bin', 'switchboard.js'), role], {
      ...(opts.cwd ? { cwd: opts.cwd } : {}),
      env: { PATH: process.env.PATH ?? '', SWITCHBOARD_LOG_LEVEL: 'debug', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const gp = new GatewayProcess(proc);
    await gp.waitForLog(role === 'worker' ? /switchboard worker started/ : /switchboard is listening/, opts.startTimeoutMs ?? 45_000).catch(async (err) => {
      gp.proc.kill('SIGKILL');
      throw new Error(`${(err as Error).message}\n${gp.logs.join('\n')}`);
    });
    return gp;
  }

  async waitForLog(re: RegExp, timeoutMs = 10_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    let seen = 0;
    for (;;) {
      for (; seen < this.logs.length; seen++) if (re.test(this.logs[seen]!)) return this.logs[seen]!;
      if (this.proc.exitCode !== null) throw new Error(`process exited (${this.proc.exitCode}) before logging ${re}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${re}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<number | null> {
    if (this.proc.exitCode === null) this.proc.kill(signal);
    return this.exited;
  }
}

/** Polls fn until it returns a truthy value. */
export async function eventually<T>(fn: () => Promise<T | undefined | null | false>, timeoutMs = 15_000, stepMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > deadline) throw new Error(`condition not met in ${timeoutMs} ms${lastErr ? `: ${(lastErr as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
