/**
 * Issue #22: `doctor --probe` checks every channel's tokens and endpoints against its platform and
 * asks a running gateway whether it is ready. Driven through the CLI as a user runs it, with the real
 * SDKs against the platform fakes (Slack Web API, Discord REST, Twilio REST), a real Dovecot for
 * IMAP and an SMTP server that checks the password.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { packageRoot } from '../kernel/paths.js';
import { FakeDiscord } from './fakes/discord-server.js';
import { SmtpSink } from './fakes/email-smtp.js';
import { FakeLlm } from './fakes/fake-llm.js';
import { APP_TOKEN, BOT_TOKEN, FakeSlack } from './fakes/slack-api.js';
import { FakeTwilio } from './fakes/sms-twilio.js';
import { type Dovecot, dovecotBinary, startDovecot } from './support/dovecot.js';
import { startGateway, TEST_OPERATOR_KEY, testConfig } from './support/gateway.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';
import { TestRedis } from './support/redis.js';

const SMTP_PASSWORD = 'smtp-password-1';
const WA_SENDER = 'whatsapp:+15550200000';
const slack = new FakeSlack();
const discord = new FakeDiscord();
const twilio = new FakeTwilio('https://bot.example.test');
const smtp = new SmtpSink({ password: SMTP_PASSWORD });
let dovecot: Dovecot;
let dir: string;

beforeAll(async () => {
  if (!dovecotBinary()) throw new Error('dovecot is not installed: npm test installs it (scripts/test-host.sh)');
  await Promise.all([slack.start(), discord.start(), twilio.start(), smtp.start()]);
  twilio.addWhatsAppSender('whatsapp:+15550201111', 'OFFLINE');
  twilio.addWhatsAppSender(WA_SENDER, 'ONLINE');
  dovecot = await startDovecot();
  dir = mkdtempSync(join(tmpdir(), 'sb-probe-'));
  const config = {
    channels: {
      slack: { mode: 'socket', apiUrl: slack.apiUrl },
      discord: { apiBaseUrl: discord.apiUrl },
      sms: { publicUrl: twilio.publicUrl, accountSid: twilio.accountSid, apiBaseUrl: twilio.url },
      whatsapp: { publicUrl: twilio.publicUrl, accountSid: twilio.accountSid, apiBaseUrl: twilio.url, from: WA_SENDER },
      email: {
        address: dovecot.user,
        imap: { host: dovecot.host, port: dovecot.port, secure: false, user: dovecot.user },
        smtp: { host: '127.0.0.1', port: smtp.port },
      },
    },
  };
  writeFileSync(join(dir, 'switchboard.json'), JSON.stringify(config));
}, 120_000);

afterAll(async () => {
  await Promise.all([slack.close(), discord.close(), twilio.close(), smtp.close(), dovecot?.stop()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The environment of a correctly set-up gateway; each test spoils one part. */
function goodEnv(): Record<string, string> {
  return {
    SWITCHBOARD_CONFIG: join(dir, 'switchboard.json'),
    SWITCHBOARD_DATA: join(dir, 'data'),
    SWITCHBOARD_SANDBOX: 'none',
    SLACK_BOT_TOKEN: BOT_TOKEN,
    SLACK_APP_TOKEN: APP_TOKEN,
    DISCORD_BOT_TOKEN: 'discord-bot-token',
    TWILIO_AUTH_TOKEN: twilio.authToken,
    EMAIL_IMAP_PASSWORD: dovecot.password,
    EMAIL_SMTP_PASSWORD: SMTP_PASSWORD,
    // Nothing listens here unless a test starts a gateway and says where.
    SWITCHBOARD_URL: 'http://127.0.0.1:9',
  };
}

interface Check {
  name: string;
  status: 'ok' | 'warn' | 'fail';
  message: string;
}

function doctorProbe(env: Record<string, string>): Promise<{ code: number | null; checks: Check[] }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [join(packageRoot, 'bin', 'switchboard.js'), 'doctor', '--probe', '--json'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (b: Buffer) => (out += b.toString()));
    p.stderr.on('data', (b: Buffer) => (err += b.toString()));
    const timer = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`doctor --probe did not exit\n${out}\n${err}`));
    }, 90_000);
    p.once('exit', (code) => {
      clearTimeout(timer);
      try {
        resolve({ code, checks: (JSON.parse(out) as { checks: Check[] }).checks });
      } catch {
        reject(new Error(`doctor --probe printed no JSON (exit ${code})\n${out}\n${err}`));
      }
    });
  });
}

const check = (checks: Check[], name: string) => {
  const c = checks.find((x) => x.name === name);
  if (!c) throw new Error(`no check "${name}" in ${checks.map((x) => x.name).join(', ')}`);
  return c;
};

describe('doctor --probe against the platforms', () => {
  it('with the right tokens every platform check passes and says what it found', async () => {
    const { checks } = await doctorProbe(goodEnv());
    expect(check(checks, 'probe slack bot token')).toMatchObject({ status: 'ok' });
    expect(check(checks, 'probe slack bot token').message).toContain('T0TEAM');
    expect(check(checks, 'probe slack app token')).toMatchObject({ status: 'ok' });
    expect(check(checks, 'probe discord bot token').message).toContain('switchboard');
    expect(check(checks, 'probe discord message content intent')).toMatchObject({ status: 'ok' });
    expect(check(checks, 'probe sms account')).toMatchObject({ status: 'ok' });
    expect(check(checks, 'probe sms account').message).toContain('active');
    expect(check(checks, 'probe whatsapp account')).toMatchObject({ status: 'ok' });
    expect(check(checks, 'probe whatsapp sender')).toMatchObject({ status: 'ok', message: `${WA_SENDER}: ONLINE` });
    expect(check(checks, 'probe email imap')).toMatchObject({ status: 'ok' });
    expect(check(checks, 'probe email smtp')).toMatchObject({ status: 'ok', message: expect.stringContaining('authenticated') });
    // No gateway runs yet: a warning, not a failure.
    expect(check(checks, 'gateway')).toMatchObject({ status: 'warn' });
    expect(check(checks, 'gateway').message).toContain('no gateway answers at http://127.0.0.1:9');
  }, 120_000);

  it('a refused token, a switched-off intent, a suspended account and wrong passwords each fail, named', async () => {
    discord.applicationFlags = 0;
    twilio.accountStatus = 'suspended';
    try {
      const { code, checks } = await doctorProbe({
        ...goodEnv(),
        SLACK_BOT_TOKEN: 'xoxb-revoked',
        SLACK_APP_TOKEN: 'xapp-wrong',
        EMAIL_IMAP_PASSWORD: 'wrong-imap-password',
        EMAIL_SMTP_PASSWORD: 'wrong-smtp-password',
      });
      expect(code).toBe(1);
      expect(check(checks, 'probe slack bot token')).toMatchObject({ status: 'fail', message: expect.stringContaining('invalid_auth') });
      expect(check(checks, 'probe slack bot token').message).toContain('SLACK_BOT_TOKEN');
      expect(check(checks, 'probe slack app token')).toMatchObject({ status: 'fail', message: expect.stringContaining('SLACK_APP_TOKEN') });
      expect(check(checks, 'probe discord message content intent')).toMatchObject({
        status: 'fail',
        message: expect.stringContaining('MESSAGE CONTENT INTENT'),
      });
      expect(check(checks, 'probe sms account')).toMatchObject({ status: 'fail', message: expect.stringContaining('suspended') });
      expect(check(checks, 'probe whatsapp account')).toMatchObject({ status: 'fail', message: expect.stringContaining('suspended') });
      expect(check(checks, 'probe whatsapp sender')).toMatchObject({ status: 'fail', message: expect.stringContaining('not checked') });
      expect(check(checks, 'probe email imap')).toMatchObject({ status: 'fail' });
      expect(check(checks, 'probe email smtp')).toMatchObject({ status: 'fail' });
      // The secrets themselves are never printed.
      const all = JSON.stringify(checks);
      for (const secret of ['wrong-imap-password', 'wrong-smtp-password', 'xoxb-revoked', twilio.authToken]) expect(all).not.toContain(secret);
    } finally {
      discord.applicationFlags = 1 << 19;
      twilio.accountStatus = 'active';
    }
  }, 120_000);

  it('a Discord token the platform refuses, and a Twilio auth token that is wrong', async () => {
    discord.refuseToken = 'discord-revoked';
    try {
      const { checks } = await doctorProbe({ ...goodEnv(), DISCORD_BOT_TOKEN: 'discord-revoked', TWILIO_AUTH_TOKEN: 'f'.repeat(32) });
      expect(check(checks, 'probe discord bot token')).toMatchObject({ status: 'fail', message: expect.stringContaining('401') });
      expect(check(checks, 'probe sms account')).toMatchObject({ status: 'fail', message: expect.stringContaining('401') });
      expect(check(checks, 'probe whatsapp account')).toMatchObject({ status: 'fail', message: expect.stringContaining('401') });
    } finally {
      discord.refuseToken = undefined;
    }
  }, 120_000);
});

describe('doctor --probe: the WhatsApp sender', () => {
  it("a sender that is not ONLINE, or not one of the account's, fails and says what to do", async () => {
    const sender = twilio.whatsappSenders.find((x) => x.senderId === WA_SENDER)!;
    sender.status = 'OFFLINE';
    sender.offlineReasons = [{ code: '63051', message: 'the WhatsApp Business Account is locked' }];
    try {
      const { code, checks } = await doctorProbe(goodEnv());
      expect(code).toBe(1);
      expect(check(checks, 'probe whatsapp account')).toMatchObject({ status: 'ok' });
      expect(check(checks, 'probe whatsapp sender')).toMatchObject({
        status: 'fail',
        message: `${WA_SENDER} is OFFLINE (the WhatsApp Business Account is locked): it sends only when ONLINE`,
      });
      twilio.whatsappSenders.splice(twilio.whatsappSenders.indexOf(sender), 1);
      const gone = check((await doctorProbe(goodEnv())).checks, 'probe whatsapp sender');
      expect(gone.status).toBe('fail');
      expect(gone.message).toContain(`${WA_SENDER} (channels.whatsapp.from) is not a WhatsApp sender of this account`);
      expect(gone.message).toContain('whatsapp:+15550201111');
    } finally {
      if (!twilio.whatsappSenders.includes(sender)) twilio.whatsappSenders.push(sender);
      sender.status = 'ONLINE';
      delete sender.offlineReasons;
    }
  }, 180_000);
});

describe('doctor --probe against a running gateway', () => {
  let gw: Gateway | undefined;
  let redis: TestRedis;
  let db: TestDatabase;
  const llm = new FakeLlm();
  beforeAll(async () => {
    await llm.start();
    redis = await TestRedis.start();
    db = await createTestDatabase();
  }, 60_000);
  afterAll(async () => {
    await gw?.close();
    await redis?.stop();
    await db?.drop();
    await llm.close();
  });

  it('reports a running gateway ready, and one with no worker as not ready with the failing check', async () => {
    const backend = { redisUrl: redis.url, databaseUrl: db.url };
    gw = await startGateway(testConfig(llm, backend), { ingress: true, worker: true });
    const env = { ...goodEnv(), SWITCHBOARD_URL: gw.url!, SWITCHBOARD_OPERATOR_KEY: TEST_OPERATOR_KEY };
    expect(check((await doctorProbe(env)).checks, 'gateway')).toMatchObject({ status: 'ok', message: `${gw!.url} is ready` });
    await gw.close();
    const ingressOnly = await startGateway(testConfig(llm, backend), { ingress: true, worker: false });
    gw = ingressOnly;
    const c = check((await doctorProbe({ ...env, SWITCHBOARD_URL: ingressOnly.url! })).checks, 'gateway');
    expect(c.status).toBe('fail');
    expect(c.message).toMatch(/503: not ready.*workers/);
  }, 180_000);
});
