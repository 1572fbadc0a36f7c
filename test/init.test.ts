/**
 * Issue #22: `switchboard init` sets a gateway up from nothing, and every command loads the `.env` it
 * writes. Driven through the CLI as a user runs it (`node bin/switchboard.js init`), against the build
 * in dist/, with the real fake-LLM server as the provider the wizard tests.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { packageRoot } from '../kernel/paths.js';
import { FakeLlm, reply } from './fakes/fake-llm.js';
import { FakeTwilio } from './fakes/sms-twilio.js';
import { GatewayProcess } from './support/gateway.js';
import { freePort } from './support/redis.js';

const fake = new FakeLlm({ fallback: () => reply('hello from the configured model') });
const dirs: string[] = [];
const procs: GatewayProcess[] = [];

beforeAll(() => fake.start());
afterAll(() => fake.close());
afterEach(async () => {
  for (const p of procs.splice(0)) await p.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function folder(): string {
  const d = mkdtempSync(join(tmpdir(), 'sb-init-'));
  dirs.push(d);
  return d;
}

interface Run {
  code: number | null;
  out: string;
  err: string;
}

/** One CLI call in `cwd`, with only PATH (and `env`) in its environment, `input` on its stdin. */
function cli(args: string[], opts: { cwd: string; env?: Record<string, string>; input?: string }): Promise<Run> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [join(packageRoot, 'bin', 'switchboard.js'), ...args], {
      cwd: opts.cwd,
      env: { PATH: process.env.PATH ?? '', ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (b: Buffer) => (out += b.toString()));
    p.stderr.on('data', (b: Buffer) => (err += b.toString()));
    p.stdin.end(opts.input ?? '');
    const timer = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`switchboard ${args.join(' ')} did not exit\n${out}\n${err}`));
    }, 60_000);
    p.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

const provider = () => ['--provider', 'openai-compatible', '--base-url', `${fake.url}/v1`, '--model', 'fake-model', '--provider-key', 'fake-key'];

describe('switchboard init --yes', () => {
  it('writes a configuration and a .env that start serves with: the generated key gets the configured model', async () => {
    const dir = folder();
    const r = await cli(['init', '--yes', '--json', ...provider()], { cwd: dir });
    expect(r.code, r.err).toBe(0);
    const report = JSON.parse(r.out) as { ok: boolean; apiKey: string; operatorKey: string; probe: { ok: boolean }; files: { env: string } };
    expect(report.ok).toBe(true);
    expect(report.probe.ok).toBe(true); // the wizard asked the provider once
    expect(report.apiKey).toMatch(/^sb_[\w-]{32}$/);
    expect(report.operatorKey).toMatch(/^sbop_[\w-]{32}$/);
    expect(report.apiKey).not.toBe(report.operatorKey);
    expect(statSync(join(dir, '.env')).mode & 0o777).toBe(0o600);
    const env = readFileSync(join(dir, '.env'), 'utf8');
    expect(env).toContain(`SWITCHBOARD_API_KEYS=${report.apiKey}`);
    expect(env).toContain(`SWITCHBOARD_OPERATOR_KEYS=${report.operatorKey}`);

    // start, run in the folder with nothing else in its environment, finds everything in .env.
    const port = await freePort();
    const gw = await GatewayProcess.spawn('start', { SWITCHBOARD_HTTP_PORT: String(port), SWITCHBOARD_SANDBOX: 'none' }, { cwd: dir });
    procs.push(gw);
    const chat = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${report.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'default', messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect(chat.status).toBe(200);
    const body = (await chat.json()) as { choices: Array<{ message: { content: string } }> };
    expect(body.choices[0]!.message.content).toBe('hello from the configured model');
    // The operator key is an operator's; the user key is not.
    expect((await fetch(`${gw.url}/v1/approvals`, { headers: { authorization: `Bearer ${report.operatorKey}` } })).status).toBe(200);
    expect((await fetch(`${gw.url}/v1/approvals`, { headers: { authorization: `Bearer ${report.apiKey}` } })).status).toBe(403);
  });

  it('never overwrites a setup without --force, and --force writes new keys', async () => {
    const dir = folder();
    expect((await cli(['init', '--yes', '--no-probe', '--provider', 'none'], { cwd: dir })).code).toBe(0);
    const first = readFileSync(join(dir, '.env'), 'utf8');
    const again = await cli(['init', '--yes', '--no-probe', '--provider', 'none'], { cwd: dir });
    expect(again.code).toBe(2);
    expect(again.err).toMatch(/already exist.*--force overwrites/);
    expect(readFileSync(join(dir, '.env'), 'utf8')).toBe(first);
    expect((await cli(['init', '--yes', '--no-probe', '--provider', 'none', '--force'], { cwd: dir })).code).toBe(0);
    expect(readFileSync(join(dir, '.env'), 'utf8')).not.toBe(first);
  });

  it('refuses bad answers with the flag named, and writes nothing', async () => {
    const dir = folder();
    const cases: Array<[string[], RegExp]> = [
      [['--channels', 'sms'], /--public-url is required with --yes/],
      [['--channels', 'sms', '--public-url', 'bot.example.com'], /--public-url: expected the public http\(s\) URL/],
      [['--channels', 'slak'], /--channels: unknown channel "slak"/],
      [['--provider', 'openia'], /--provider: expected one of openai, anthropic, openai-compatible, none/],
      [['--provider', 'openai-compatible', '--model', 'm'], /--base-url is required with --yes/],
      [['--channels', 'discord', '--discord-app-id', 'my-bot'], /--discord-app-id: expected the numeric Application ID/],
      [['--operator', 'irc:bob'], /--operator: expected CHANNEL:ID/],
      [['--channels', 'whatsapp', '--public-url', 'https://b.example.com', '--whatsapp-from', '15550200000'], /--whatsapp-from: expected a WhatsApp sender/],
    ];
    for (const [args, message] of cases) {
      const r = await cli(['init', '--yes', '--no-probe', ...args], { cwd: dir });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err).toMatch(message);
    }
    expect(() => statSync(join(dir, '.env'))).toThrow();
  });

  it('an answer cannot inject a variable into .env: a line break is refused, quotes survive the round trip', async () => {
    const dir = folder();
    for (const flag of ['--provider-key', '--model']) {
      const r = await cli(['init', '--yes', '--no-probe', '--provider', 'openai', flag, 'sk-x\nSWITCHBOARD_OPEN_ACCESS=true'], { cwd: dir });
      expect(r.code, flag).toBe(2);
      expect(r.err).toContain('cannot hold a line break');
      expect(() => statSync(join(dir, '.env'))).toThrow();
    }
    // A key with quotes and spaces is written so that every command reads it back unchanged.
    const key = `sk-"odd' key`;
    expect((await cli(['init', '--yes', '--no-probe', '--provider', 'openai', '--provider-key', key], { cwd: dir })).code).toBe(0);
    const d = await cli(['doctor', '--json'], { cwd: dir, env: { SWITCHBOARD_SANDBOX: 'none' } });
    const report = JSON.parse(d.out) as { config: { http: { openAccess: boolean } }; slots: Array<{ keyPresent: boolean }> };
    expect(report.config.http.openAccess).toBe(false);
    expect(report.slots[0]!.keyPresent).toBe(true);
    expect(readFileSync(join(dir, '.env'), 'utf8')).toContain(`OPENAI_API_KEY=\`${key}\``);
  });

  it('a provider that refuses is reported (exit 1), with the files written for the operator to fix', async () => {
    const dir = folder();
    const dead = await freePort(); // nothing listens there
    const r = await cli(['init', '--yes', '--json', '--provider', 'openai-compatible', '--base-url', `http://127.0.0.1:${dead}/v1`, '--model', 'm'], {
      cwd: dir,
    });
    expect(r.code).toBe(1);
    const report = JSON.parse(r.out) as { ok: boolean; probe: { ok: boolean; error: string } };
    expect(report.ok).toBe(false);
    expect(report.probe.ok).toBe(false);
    expect(report.probe.error.length).toBeGreaterThan(0);
    expect(readFileSync(join(dir, '.env'), 'utf8')).toContain(`OPENAI_BASE_URL=http://127.0.0.1:${dead}/v1`);
  });
});

describe('switchboard init: what each platform needs', () => {
  it('prints the Slack manifest, the Discord invite URL and the Twilio webhook URLs; doctor then names each secret left to fill', async () => {
    const dir = folder();
    const r = await cli(
      [
        'init',
        '--yes',
        '--json',
        '--no-probe',
        '--provider',
        'none',
        '--channels',
        'slack,discord,sms',
        '--access',
        'allowlist',
        '--public-url',
        'https://bot.example.com',
        '--discord-app-id',
        '123456789012345678',
        '--operator',
        'slack:U0123ABCD,discord:987654321098765432',
      ],
      { cwd: dir },
    );
    expect(r.code, r.err).toBe(0);
    const report = JSON.parse(r.out) as { guides: Array<{ channel: string; text: string }>; toFill: string[] };
    const guide = (c: string) => report.guides.find((g) => g.channel === c)!.text;

    // Slack: a manifest for Socket Mode with every scope and event the channel uses, and the app token's scope.
    const manifest = parseYaml(
      guide('slack')
        .split('\n')
        .filter((l) => l.startsWith('    '))
        .map((l) => l.slice(4))
        .join('\n'),
    ) as {
      oauth_config: { scopes: { bot: string[] } };
      settings: { socket_mode_enabled: boolean; event_subscriptions: { bot_events: string[] }; interactivity: { is_enabled: boolean } };
    };
    expect(manifest.oauth_config.scopes.bot).toEqual(
      expect.arrayContaining(['chat:write', 'app_mentions:read', 'im:history', 'channels:history', 'users:read']),
    );
    expect(manifest.settings.event_subscriptions.bot_events).toEqual(expect.arrayContaining(['app_mention', 'message.im', 'message.channels']));
    expect(manifest.settings.socket_mode_enabled).toBe(true);
    expect(manifest.settings.interactivity.is_enabled).toBe(true);
    expect(guide('slack')).toContain('connections:write');

    // Discord: the invite URL with this application, the bot scopes and exactly the permissions it needs; the intent to switch on.
    const invite = new URL(/https:\/\/discord\.com\/oauth2\/authorize\S+/.exec(guide('discord'))![0]);
    expect(invite.searchParams.get('client_id')).toBe('123456789012345678');
    expect(invite.searchParams.get('scope')).toBe('bot applications.commands');
    expect(BigInt(invite.searchParams.get('permissions')!)).toBe((1n << 10n) | (1n << 11n) | (1n << 16n) | (1n << 38n));
    expect(guide('discord')).toContain('MESSAGE CONTENT INTENT');

    // SMS: the URLs to paste into the Twilio number.
    expect(guide('sms')).toContain('https://bot.example.com/v1/channels/sms/inbound');
    expect(guide('sms')).toContain('https://bot.example.com/v1/channels/sms/status');

    // The configuration: the access policy chosen, the operator ids allowed and made operators.
    const config = parseYaml(readFileSync(join(dir, 'switchboard.yaml'), 'utf8')) as Record<string, any>;
    expect(config.access.slack).toEqual({ policy: 'allowlist', allow: ['U0123ABCD'] });
    expect(config.approvals.operators.discord).toEqual(['987654321098765432']);
    expect(report.toFill).toEqual(['SLACK_BOT_TOKEN', 'SLACK_APP_TOKEN', 'DISCORD_BOT_TOKEN', 'TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN']);

    // doctor in the folder reads .env and the file: every secret still empty is a failing check, nothing else fails.
    const d = await cli(['doctor', '--json'], { cwd: dir });
    const checks = (JSON.parse(d.out) as { checks: Array<{ name: string; status: string; message: string }> }).checks;
    const failing = checks.filter((c) => c.status === 'fail');
    expect(failing.map((c) => c.name).sort()).toEqual(['channel discord', 'channel slack', 'channel sms', 'provider']);
    expect(failing.find((c) => c.name === 'channel slack')!.message).toContain('SLACK_BOT_TOKEN');
  });

  it('whatsapp: asks for the sender and the outside-window template, shares the Twilio questions with SMS, and doctor --probe checks the sender', async () => {
    const dir = folder();
    const tw = new FakeTwilio('https://bot.example.com');
    await tw.start();
    try {
      tw.addWhatsAppSender('whatsapp:+15550200000', 'PENDING_VERIFICATION');
      const template = `HX${'c3'.repeat(16)}`;
      const r = await cli(
        [
          'init',
          '--yes',
          '--json',
          '--no-probe',
          '--provider',
          'none',
          '--channels',
          'sms,whatsapp',
          '--public-url',
          'https://bot.example.com',
          '--twilio-account-sid',
          tw.accountSid,
          '--whatsapp-from',
          '+15550200000',
          '--whatsapp-template-sid',
          template,
          '--operator',
          'whatsapp:+15550209999',
        ],
        { cwd: dir },
      );
      expect(r.code, r.err).toBe(0);
      const report = JSON.parse(r.out) as { guides: Array<{ channel: string; text: string }>; toFill: string[] };
      const config = parseYaml(readFileSync(join(dir, 'switchboard.yaml'), 'utf8')) as Record<string, any>;
      expect(config.channels.whatsapp).toEqual({
        publicUrl: 'https://bot.example.com',
        accountSid: tw.accountSid,
        from: 'whatsapp:+15550200000',
        outsideWindowTemplate: { contentSid: template, variables: {} },
      });
      expect(config.channels.sms.publicUrl).toBe('https://bot.example.com');
      expect(config.approvals.operators.whatsapp).toEqual(['whatsapp:+15550209999']);
      // One auth token for both Twilio channels, written once.
      expect(report.toFill).toEqual(['TWILIO_AUTH_TOKEN']);
      expect(readFileSync(join(dir, '.env'), 'utf8').match(/^TWILIO_AUTH_TOKEN=/gm)).toHaveLength(1);
      const guide = report.guides.find((g) => g.channel === 'whatsapp')!.text;
      expect(guide).toContain('https://bot.example.com/v1/channels/whatsapp/inbound');
      expect(guide).toContain('https://bot.example.com/v1/channels/whatsapp/status');
      expect(guide).toContain('whatsapp:+15550200000 must be ONLINE');

      // doctor --probe with the token filled in (and the REST API pointed at the fake): the sender is not ONLINE yet.
      writeFileSync(
        join(dir, 'switchboard.yaml'),
        readFileSync(join(dir, 'switchboard.yaml'), 'utf8').replace(/publicUrl: https:\/\/bot\.example\.com\n/g, (m) => `${m}    apiBaseUrl: ${tw.url}\n`),
      );
      const env = { TWILIO_AUTH_TOKEN: tw.authToken, SWITCHBOARD_URL: 'http://127.0.0.1:9' };
      const probe = async () =>
        (
          JSON.parse((await cli(['doctor', '--probe', '--json'], { cwd: dir, env })).out) as {
            checks: Array<{ name: string; status: string; message: string }>;
          }
        ).checks;
      let checks = await probe();
      expect(checks.find((c) => c.name === 'probe whatsapp account')).toMatchObject({ status: 'ok' });
      expect(checks.find((c) => c.name === 'probe whatsapp sender')).toMatchObject({
        status: 'fail',
        message: 'whatsapp:+15550200000 is PENDING_VERIFICATION: it sends only when ONLINE',
      });
      tw.whatsappSenders[0]!.status = 'ONLINE';
      checks = await probe();
      expect(checks.find((c) => c.name === 'probe whatsapp sender')).toMatchObject({ status: 'ok', message: 'whatsapp:+15550200000: ONLINE' });
    } finally {
      await tw.close();
    }
  });

  it('email: checks that the IMAP and SMTP servers answer', async () => {
    const dir = folder();
    const listening: Server = createServer((s) => s.end());
    await new Promise<void>((res) => listening.listen(0, '127.0.0.1', res));
    const open = (listening.address() as { port: number }).port;
    const closed = await freePort();
    try {
      const r = await cli(
        [
          'init',
          '--yes',
          '--json',
          '--provider',
          'none',
          '--channels',
          'email',
          '--email-address',
          'agent@example.com',
          '--imap-host',
          '127.0.0.1',
          '--imap-port',
          String(open),
          '--smtp-host',
          '127.0.0.1',
          '--smtp-port',
          String(closed),
        ],
        { cwd: dir },
      );
      const report = JSON.parse(r.out) as { checks: Array<{ name: string; ok: boolean; message: string }> };
      expect(report.checks.find((c) => c.name === 'imap')).toMatchObject({ ok: true });
      expect(report.checks.find((c) => c.name === 'smtp')).toMatchObject({ ok: false });
      expect(report.checks.find((c) => c.name === 'smtp')!.message).toContain(String(closed));
    } finally {
      await new Promise((res) => listening.close(res));
    }
  });
});

describe('switchboard init, interactive', () => {
  it('asks in turn, asks again after a bad answer, and writes what was answered', async () => {
    const dir = folder();
    // provider (bad, then good), model, base URL, key, channels, access, then sms's public URL, account SID, own id.
    const input = [
      'claude',
      'openai-compatible',
      'fake-model',
      `${fake.url}/v1`,
      'fake-key',
      'sms',
      'open',
      'https://sms.example.com',
      '',
      '+15550001111',
      '',
    ].join('\n');
    const r = await cli(['init', '--interactive'], { cwd: dir, input });
    expect(r.code, `${r.out}\n${r.err}`).toBe(0);
    expect(r.out).toContain('expected one of openai, anthropic, openai-compatible, none');
    expect(r.out).toContain('provider: ok');
    const config = parseYaml(readFileSync(join(dir, 'switchboard.yaml'), 'utf8')) as Record<string, any>;
    expect(config.channels.sms.publicUrl).toBe('https://sms.example.com');
    expect(config.access.sms).toEqual({ policy: 'open', allow: ['+15550001111'] });
    expect(readFileSync(join(dir, '.env'), 'utf8')).toContain('SWITCHBOARD_MODEL=fake-model');
  });

  it('without a terminal and without --yes it explains instead of hanging', async () => {
    const r = await cli(['init'], { cwd: folder() });
    expect(r.code).toBe(2);
    expect(r.err).toContain('--yes');
  });
});

describe('.env loading', () => {
  it('every verb reads .env from the folder; the environment wins; SWITCHBOARD_ENV_FILE names another file or turns it off', async () => {
    const dir = folder();
    writeFileSync(join(dir, '.env'), 'SWITCHBOARD_HTTP_PORT=7001\nSWITCHBOARD_MODEL="from the file"\n');
    writeFileSync(join(dir, 'other.env'), 'SWITCHBOARD_HTTP_PORT=7002\n');
    const port = async (env: Record<string, string> = {}) => {
      const r = await cli(['doctor', '--json'], { cwd: dir, env });
      return (JSON.parse(r.out) as { config: { http: { port: number } } }).config.http.port;
    };
    expect(await port()).toBe(7001);
    expect(await port({ SWITCHBOARD_HTTP_PORT: '7003' })).toBe(7003);
    expect(await port({ SWITCHBOARD_ENV_FILE: 'other.env' })).toBe(7002);
    expect(await port({ SWITCHBOARD_ENV_FILE: 'off' })).toBe(8787);
    const missing = await cli(['doctor'], { cwd: dir, env: { SWITCHBOARD_ENV_FILE: 'nope.env' } });
    expect(missing.code).toBe(2);
    expect(missing.err.trim().split('\n')).toHaveLength(1);
    expect(missing.err).toContain('SWITCHBOARD_ENV_FILE: cannot read');
  });
});
