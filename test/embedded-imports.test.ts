/**
 * What the embedded default (`switchboard start`, no Redis, no Postgres, no channels, no MCP
 * servers) loads at start: none of the packages only another mode or an unconfigured part uses.
 * Each of them costs start time and resident memory (bench/embedded.ts measures both); this holds
 * the line on which are loaded, whatever the machine's speed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../kernel/paths.js';
import { FakeLlm } from './fakes/fake-llm.js';
import { GatewayProcess, readyz } from './support/gateway.js';

const OPERATOR_KEY = 'op-embedded-imports-01';
const NOT_AT_START = [
  'ioredis',
  'bullmq',
  'pg',
  '@modelcontextprotocol/sdk',
  'discord.js',
  '@slack/bolt',
  '@slack/web-api',
  'grammy',
  'imapflow',
  'nodemailer',
  'playwright-core',
];

describe('the embedded default at start', () => {
  const data = mkdtempSync(join(tmpdir(), 'sb-embedded-imports-'));
  const fake = new FakeLlm();
  let gw: GatewayProcess | undefined;
  afterAll(async () => {
    await gw?.kill();
    await fake.close();
    rmSync(data, { recursive: true, force: true });
  });

  it('loads no Redis, Postgres, MCP or channel SDK, and still answers /readyz', async () => {
    await fake.start();
    const recorder = pathToFileURL(join(packageRoot, 'test', 'support', 'import-recorder.mjs')).href;
    gw = await GatewayProcess.spawn('start', {
      NODE_OPTIONS: `--import ${recorder}`,
      SWITCHBOARD_HTTP_PORT: '0',
      SWITCHBOARD_OPERATOR_KEYS: OPERATOR_KEY,
      SWITCHBOARD_DATA: data,
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'fake',
      SWITCHBOARD_MODEL: 'fake-model',
    });
    const imported = gw.logs.filter((l) => l.startsWith('IMPORTED ')).map((l) => l.slice('IMPORTED '.length));
    expect(imported).toContain('@electric-sql/pglite'); // the recorder sees the gateway's imports
    expect(imported.filter((p) => NOT_AT_START.includes(p))).toEqual([]);
    expect((await readyz(gw.url!, OPERATOR_KEY)).status).toBe(200);
  });
});
