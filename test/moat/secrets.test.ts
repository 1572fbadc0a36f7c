/** The secret/PII guard: corpus recall and false positives, placeholders, restore, overlaps, formats. */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { type Finding, loadLines, loadSecretCorpus, Redactor, scanAndRedact, scanText } from '../../moat/secrets.js';

const corpusPath = (name: string) => fileURLToPath(new URL(`../corpora/secrets/${name}`, import.meta.url));

/** Fake values are assembled at run time so this file holds nothing a push-protection scanner would flag. */
let seed = 0x5eed;
function rand(): number {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed / 0x80000000;
}
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const B64 = ALNUM + '+/';
function chars(set: string, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += set[Math.floor(rand() * set.length)];
  return s;
}
/** Random, with upper, lower and digit (as vendor tokens have). */
function mixedChars(n: number): string {
  for (;;) {
    const v = chars(ALNUM, n);
    if (/[A-Z]/.test(v) && /[a-z]/.test(v) && /\d/.test(v)) return v;
  }
}
const fake = {
  openai: () => 'sk-' + 'proj-' + mixedChars(74) + 'T3Blbk' + 'FJ' + mixedChars(74),
  github: () => 'gh' + 'p_' + mixedChars(36),
  anthropic: () => 'sk-' + 'ant-api03-' + mixedChars(93) + 'AA',
  aws: () => 'AK' + 'IA' + chars('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567', 15) + '7',
  slack: () => 'xo' + 'xb-' + chars('0123456789', 11) + '-' + chars('0123456789', 13) + '-' + mixedChars(24),
  pemBody: (lines: number) => Array.from({ length: lines }, () => chars(B64, 64)),
};

const SECRET_KINDS = [
  'aws_access_key',
  'aws_secret_key',
  'gcp_service_account',
  'gcp_api_key',
  'google_ai_key',
  'azure_storage_key',
  'github_token',
  'gitlab_token',
  'bitbucket_app_password',
  'slack_token',
  'slack_webhook',
  'discord_token',
  'discord_webhook',
  'telegram_bot_token',
  'twilio_key',
  'stripe_key',
  'paypal_braintree',
  'square_token',
  'openai_key',
  'anthropic_key',
  'huggingface_token',
  'groq_key',
  'npm_token',
  'pypi_token',
  'sendgrid_key',
  'mailgun_key',
  'private_key',
  'jwt',
  'connection_string',
  'generic_secret',
];
const PII_KINDS = ['card_number', 'iban', 'ssn'];
const CONTACT_KINDS = ['phone', 'email'];

function assertWellFormed(text: string, findings: Finding[]): void {
  for (let i = 0; i < findings.length; i++) {
    const f = findings[i]!;
    expect(f.start).toBeGreaterThanOrEqual(0);
    expect(f.end).toBeGreaterThan(f.start);
    expect(f.end).toBeLessThanOrEqual(text.length);
    if (i > 0) expect(f.start).toBeGreaterThanOrEqual(findings[i - 1]!.end); // sorted, disjoint
  }
}

describe('secret corpora', () => {
  const truths = loadSecretCorpus(corpusPath('true.txt'));
  const lookalikes = loadLines(corpusPath('lookalike.txt'));

  it('are big enough and cover every kind several times', () => {
    expect(truths.length).toBeGreaterThanOrEqual(200);
    expect(lookalikes.length).toBeGreaterThanOrEqual(200);
    const count = new Map<string, number>();
    for (const t of truths) count.set(t.kind, (count.get(t.kind) ?? 0) + 1);
    for (const k of [...SECRET_KINDS, ...PII_KINDS, ...CONTACT_KINDS]) expect(count.get(k) ?? 0, k).toBeGreaterThanOrEqual(3);
  });

  it('true.txt: recall ≥ 99%, right kind ≥ 95%', () => {
    // phone/email are the contact class, off by default: the corpus is scanned with every class on.
    const missed: string[] = [];
    const wrongKind: string[] = [];
    for (const t of truths) {
      const f = scanText(t.text, { contact: true });
      assertWellFormed(t.text, f);
      if (!f.length) missed.push(`${t.kind}: ${t.text.slice(0, 120)}`);
      else if (!f.some((x) => x.kind === t.kind)) wrongKind.push(`${t.kind} → ${f.map((x) => x.kind).join(',')}: ${t.text.slice(0, 120)}`);
    }
    const recall = 1 - missed.length / truths.length;
    const rightKind = 1 - (missed.length + wrongKind.length) / truths.length;
    expect(recall, missed.join('\n')).toBeGreaterThanOrEqual(0.99);
    expect(rightKind, wrongKind.join('\n')).toBeGreaterThanOrEqual(0.95);
  });

  it('true.txt with default options: every secret and PII line is still found', () => {
    const missed = truths
      .filter((t) => !CONTACT_KINDS.includes(t.kind))
      .filter((t) => scanText(t.text).length === 0)
      .map((t) => `${t.kind}: ${t.text.slice(0, 120)}`);
    expect(missed.length / truths.length, missed.join('\n')).toBeLessThanOrEqual(0.01);
  });

  it('lookalike.txt: false positives ≤ 1% with default options', () => {
    const flagged = lookalikes
      .map((l) => ({ l, f: scanText(l) }))
      .filter((x) => x.f.length)
      .map((x) => `${x.f.map((f) => `${f.kind}=${x.l.slice(f.start, f.end)}`).join(', ')} :: ${x.l.slice(0, 120)}`);
    expect(flagged.length / lookalikes.length, flagged.join('\n')).toBeLessThanOrEqual(0.01);
  });

  it('restore() round-trips every corpus line, and redacted text no longer holds the values', () => {
    const r = new Redactor({ contact: true });
    for (const t of truths) {
      const { text, findings } = r.redact(t.text);
      expect(r.restore(text)).toBe(t.text);
      for (const f of findings) expect(text).not.toContain(t.text.slice(f.start, f.end));
    }
  });
});

describe('Redactor', () => {
  it('gives the same value the same placeholder, and different values different ones', () => {
    const k1 = fake.openai();
    const k2 = fake.openai();
    const r = new Redactor();
    const a = r.redact(`OPENAI_API_KEY=${k1}`);
    const b = r.redact(`use ${k1} again, and the backup key ${k2}`);
    expect(a.text).toBe('OPENAI_API_KEY=[REDACTED:openai_key#1]');
    expect(b.text).toBe('use [REDACTED:openai_key#1] again, and the backup key [REDACTED:openai_key#2]');
    expect(r.size).toBe(2);
    // numbering is per kind
    const gh = r.redact(`token ${fake.github()}`);
    expect(gh.text).toBe('token [REDACTED:github_token#1]');
    expect(r.size).toBe(3);
    // another Redactor starts its own map
    expect(new Redactor().redact(`x ${k2}`).text).toBe('x [REDACTED:openai_key#1]');
  });

  it('restore() puts the originals back, leaves unknown placeholders, and can JSON-escape', () => {
    const key = fake.anthropic();
    const r = new Redactor();
    const { text } = r.redact(`ANTHROPIC_API_KEY=${key}`);
    const toolArgs = JSON.stringify({ headers: { 'x-api-key': '[REDACTED:anthropic_key#1]' }, other: '[REDACTED:anthropic_key#9]' });
    expect(JSON.parse(r.restore(toolArgs))).toEqual({ headers: { 'x-api-key': key }, other: '[REDACTED:anthropic_key#9]' });
    expect(r.restore(text)).toBe(`ANTHROPIC_API_KEY=${key}`);

    const pem = ['-----BEGIN RSA PRIVATE KEY-----', ...fake.pemBody(8), '-----END RSA PRIVATE KEY-----'].join('\n');
    const r2 = new Redactor();
    const red = r2.redact(`key:\n${pem}\n`);
    expect(red.text).toBe('key:\n[REDACTED:private_key#1]\n');
    const args = JSON.stringify({ key: '[REDACTED:private_key#1]' });
    expect(JSON.parse(r2.restore(args, { json: true }))).toEqual({ key: pem });
    expect(r2.entries()).toEqual([{ placeholder: '[REDACTED:private_key#1]', kind: 'private_key', value: pem }]);
  });

  it('is idempotent: redacted text has nothing left to redact', () => {
    const text = `DB_PASSWORD=${mixedChars(18)}\naws_access_key_id=${fake.aws()}\npostgres://app:${mixedChars(14)}@db.internal/app`;
    const once = new Redactor().redact(text);
    expect(once.findings.length).toBe(3);
    expect(scanText(once.text)).toEqual([]);
  });

  it('scanAndRedact returns findings and the redacted text', () => {
    const tok = fake.slack();
    const r = scanAndRedact(`SLACK_BOT_TOKEN=${tok}`);
    expect(r.findings).toEqual([{ kind: 'slack_token', start: 16, end: 16 + tok.length, class: 'secret' }]);
    expect(r.redacted).toBe('SLACK_BOT_TOKEN=[REDACTED:slack_token#1]');
  });
});

describe('scanText', () => {
  it('resolves overlaps: the more specific kind wins', () => {
    const key = fake.openai();
    // generic "KEY=value" and the vendor format cover the same span
    expect(scanText(`OPENAI_API_KEY=${key}`).map((f) => f.kind)).toEqual(['openai_key']);
    // a GitHub token used as the password of a URL
    const gh = fake.github();
    const url = `git clone https://x-access-token:${gh}@github.com/acme/infra.git`;
    const f = scanText(url);
    expect(f.map((x) => x.kind)).toEqual(['github_token']);
    expect(url.slice(f[0]!.start, f[0]!.end)).toBe(gh);
    // the service-account JSON wins over the PEM key inside it
    const sa = JSON.stringify({
      type: 'service_account',
      private_key: ['-----BEGIN PRIVATE KEY-----', ...fake.pemBody(6), '-----END PRIVATE KEY-----', ''].join('\n'),
    });
    expect(scanText(sa).map((x) => x.kind)).toEqual(['gcp_service_account']);
    // JWT as a bearer token: one jwt finding, not a generic one around it
    const jwt =
      ['{"alg":"HS256","typ":"JWT"}', '{"sub":"42","iat":1718000000}'].map((s) => Buffer.from(s).toString('base64url')).join('.') + '.' + chars(ALNUM, 43);
    expect(scanText(`Authorization: Bearer ${jwt}`).map((x) => x.kind)).toEqual(['jwt']);
  });

  it('reports only the secret, not its key name', () => {
    const pw = mixedChars(16) + '!';
    const text = `export DB_PASSWORD="${pw}"`;
    const [f] = scanText(text);
    expect(text.slice(f!.start, f!.end)).toBe(pw);
  });

  it('keeps the contact class off by default and finds it when asked', () => {
    const text = 'Reach Dana at dana.lee@fastmail.fm or (415) 555-0172, card 4539 1488 0343 6467.';
    expect(scanText(text).map((f) => f.kind)).toEqual(['card_number']);
    const all = scanText(text, { contact: true });
    expect(all.map((f) => [f.kind, f.class])).toEqual([
      ['email', 'contact'],
      ['phone', 'contact'],
      ['card_number', 'pii'],
    ]);
    expect(text.slice(all[0]!.start, all[0]!.end)).toBe('dana.lee@fastmail.fm');
    expect(text.slice(all[1]!.start, all[1]!.end)).toBe('(415) 555-0172');
    expect(scanText(text, { pii: false })).toEqual([]);
    expect(scanText(`GITHUB_TOKEN=${fake.github()}`, { secrets: false })).toEqual([]);
  });

  it('finds PEM blocks spanning lines, encrypted ones and truncated pastes', () => {
    const body = fake.pemBody(12);
    const pem = ['-----BEGIN RSA PRIVATE KEY-----', ...body, '-----END RSA PRIVATE KEY-----'].join('\n');
    const text = `here is the deploy key\n${pem}\nthanks`;
    const f = scanText(text);
    expect(f.map((x) => x.kind)).toEqual(['private_key']);
    expect(text.slice(f[0]!.start, f[0]!.end)).toBe(pem);

    const crlf = pem.replace(/\n/g, '\r\n');
    expect(scanText(crlf).map((x) => [x.start, x.end])).toEqual([[0, crlf.length]]);

    const enc = [
      '-----BEGIN RSA PRIVATE KEY-----',
      'Proc-Type: 4,ENCRYPTED',
      'DEK-Info: AES-128-CBC,3F2A9C1B0E7D6A5B4C3D2E1F0A9B8C7D',
      '',
      ...body,
      '-----END RSA PRIVATE KEY-----',
    ].join('\n');
    expect(scanText(enc).map((x) => x.kind)).toEqual(['private_key']);

    const pgp = ['-----BEGIN PGP PRIVATE KEY BLOCK-----', '', ...body, '=' + chars(ALNUM, 4), '-----END PGP PRIVATE KEY BLOCK-----'].join('\n');
    expect(scanText(pgp).map((x) => [x.kind, x.end - x.start])).toEqual([['private_key', pgp.length]]);

    const truncated = ['-----BEGIN OPENSSH PRIVATE KEY-----', ...body.slice(0, 4)].join('\n') + '\n\n(rest cut off)';
    const t = scanText(truncated);
    expect(t.map((x) => x.kind)).toEqual(['private_key']);
    expect(truncated.slice(t[0]!.start, t[0]!.end)).toBe(['-----BEGIN OPENSSH PRIVATE KEY-----', ...body.slice(0, 4)].join('\n'));

    // public material and documentation placeholders are not private keys
    expect(scanText(['-----BEGIN PUBLIC KEY-----', ...body, '-----END PUBLIC KEY-----'].join('\n'))).toEqual([]);
    expect(scanText('-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg...\n-----END PRIVATE KEY-----')).toEqual([]);
  });

  it('finds secrets inside JSON strings, including escaped JSON and "\\n" escapes', () => {
    const key = fake.openai();
    const body = JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: `my key is ${key}, why 401?` }] });
    const f = scanText(body);
    expect(f.map((x) => body.slice(x.start, x.end))).toEqual([key]);

    const inner = JSON.stringify({ api_key: key, note: `line1\n${fake.github()}` });
    const twice = JSON.stringify({ payload: inner }); // escaped quotes and a literal \n before the token
    const g = scanText(twice);
    expect(g.map((x) => x.kind)).toEqual(['openai_key', 'github_token']);
    expect(twice.slice(g[0]!.start, g[0]!.end)).toBe(key);

    const pw = mixedChars(14) + '#';
    const cfg = JSON.stringify(JSON.stringify({ username: 'svc', password: pw }));
    const h = scanText(cfg);
    expect(h.map((x) => [x.kind, cfg.slice(x.start, x.end)])).toEqual([['generic_secret', pw]]);

    const pem = ['-----BEGIN EC PRIVATE KEY-----', ...fake.pemBody(3), '-----END EC PRIVATE KEY-----'].join('\n');
    const asJson = JSON.stringify({ tls_key: pem });
    const p = scanText(asJson);
    expect(p.map((x) => x.kind)).toEqual(['private_key']);
    expect(JSON.parse(`"${asJson.slice(p[0]!.start, p[0]!.end)}"`)).toBe(pem);
  });

  it('finds URL-encoded passwords in connection strings (span = the password only)', () => {
    const cases = [
      'postgres://app:p%40ss%3Aw0rd%21Xy@db.internal:5432/app',
      'mongodb+srv://svc:Zq9%2Fk%2BvL2mN@cluster0.x7kq2.mongodb.net/prod?retryWrites=true',
      'redis://:Hk3%23pL9q%25Rt2@cache.acme.io:6380/0',
    ];
    for (const url of cases) {
      const f = scanText(`DATABASE_URL=${url}`);
      expect(
        f.map((x) => x.kind),
        url,
      ).toEqual(['connection_string']);
      const pw = /:\/\/[^:]*:([^@]+)@/.exec(url)![1]!;
      expect(`DATABASE_URL=${url}`.slice(f[0]!.start, f[0]!.end)).toBe(pw);
      const r = new Redactor();
      expect(r.restore(r.redact(url).text)).toBe(url);
    }
    // a password containing an unencoded "@": the last "@" before the host ends it
    const raw = 'mysql://root:S3cr@t!xY9@10.0.0.5:3306/shop';
    const [f] = scanText(raw);
    expect(raw.slice(f!.start, f!.end)).toBe('S3cr@t!xY9');
    // no password, placeholders, default credentials
    for (const url of [
      'postgres://app@db:5432/app',
      'postgres://USER:PASSWORD@HOST:5432/DB',
      'redis://:${REDIS_PASSWORD}@redis:6379',
      'amqp://guest:guest@localhost:5672/',
    ]) {
      expect(scanText(url), url).toEqual([]);
    }
  });

  it('treats documented examples and placeholders as non-secrets', () => {
    for (const t of [
      'aws_access_key_id = AKIAIOSFODNN7EXAMPLE',
      'aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
      'OPENAI_API_KEY=sk-...',
      'password=<your-password>',
      'password: ${DB_PASS}',
      'password=changeme',
      'token: ' + 'gh' + 'p_' + 'x'.repeat(36),
      'Use 4242 4242 4242 4242 with any future expiry',
    ]) {
      expect(scanText(t), t).toEqual([]);
    }
  });

  it('validates checksums: Luhn for cards, mod-97 for IBANs, SSA rules for SSNs', () => {
    expect(scanText('card 4539 1488 0343 6467').map((f) => f.kind)).toEqual(['card_number']);
    expect(scanText('card 4539 1488 0343 6468')).toEqual([]);
    expect(scanText('IBAN DE44 5001 0517 5407 3249 31').map((f) => f.kind)).toEqual(['iban']);
    expect(scanText('IBAN DE45 5001 0517 5407 3249 31')).toEqual([]);
    expect(scanText('SSN: 536-22-1234').map((f) => f.kind)).toEqual(['ssn']);
    for (const bad of ['000-22-1234', '666-22-1234', '912-22-1234', '536-00-1234', '536-22-0000']) expect(scanText(`SSN: ${bad}`), bad).toEqual([]);
  });

  it('scans a 1 MB input', () => {
    const planted = [fake.openai(), fake.github(), fake.aws(), fake.slack()];
    const filler = [
      'The quick brown fox jumps over the lazy dog; order #48213 shipped on 2024-06-12.\n',
      '{"id": "5b9c1e2a-8f3d-4c6b-9a1e-2d3f4a5b6c7d", "sha": "9fceb02d0ae598e95dc970b74767f19372d61af8", "total": 49.90}\n',
      `${new Date(0).toISOString()} INFO request GET /api/v2/orders?page=3 200 12ms\n`,
      'const maxTokens = 4096; export function getAccessTokenFromRefreshTokenIfExpired() { return null; }\n',
    ];
    let text = '';
    let i = 0;
    while (text.length < 1_000_000) {
      text += filler[i % filler.length];
      if (i % 2500 === 1000) text += `config: KEY=${planted[((i / 2500) % planted.length) | 0]}\n`;
      i++;
    }
    const t0 = performance.now();
    const f = scanText(text);
    const ms = performance.now() - t0;
    assertWellFormed(text, f);
    const values = new Set(f.map((x) => text.slice(x.start, x.end)));
    for (const p of planted) expect(values.has(p)).toBe(true);
    expect(f.every((x) => planted.includes(text.slice(x.start, x.end)))).toBe(true);
    console.log(`scanText: ${(text.length / 1e6).toFixed(2)} MB in ${ms.toFixed(0)} ms, ${f.length} findings`);
  });
});
