/**
 * Detection rules for the secret/PII scanner (./secrets.ts). Pure functions and
 * data, no I/O. Each rule proposes candidate spans; ./secrets.ts resolves
 * overlaps (higher `priority` = more specific kind wins).
 *
 * Kinds. secret class: aws_access_key, aws_secret_key, gcp_service_account,
 * gcp_api_key, google_ai_key (an AIza key next to Gemini/AI Studio context),
 * google_oauth_token, azure_storage_key, azure_client_secret, github_token,
 * gitlab_token, bitbucket_app_password, atlassian_token, slack_token,
 * slack_webhook, discord_token, discord_webhook, telegram_bot_token, twilio_key,
 * stripe_key, paypal_braintree, square_token, sendgrid_key, mailgun_key,
 * shopify_token, facebook_token, mapbox_token, openai_key (also other "sk-"
 * providers such as DeepSeek), anthropic_key, openrouter_key, huggingface_token,
 * groq_key, replicate_token, xai_key, perplexity_key, npm_token, pypi_token,
 * digitalocean_token, vault_token, databricks_token, doppler_token, postman_key,
 * linear_key, newrelic_key, grafana_token, pulumi_token, notion_token,
 * sentry_token, firebase_fcm_key, heroku_key, supabase_key, langsmith_key,
 * tavily_key, terraform_token, private_key (PEM: RSA/EC/DSA/OPENSSH/PGP/PKCS8,
 * encrypted, truncated; age keys), jwt, connection_string, generic_secret.
 * pii class: card_number, iban, ssn. contact class: phone, email.
 *
 * Decisions (documented non-secrets, i.e. deliberately NOT reported):
 *  - Vendor-documented example credentials: anything containing "EXAMPLE" in a
 *    vendor token (AWS AKIAIOSFODNN7EXAMPLE, wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY),
 *    Stripe's and Telegram's documentation keys, the jwt.io sample token,
 *    well-known test card numbers (4111 1111 1111 1111, 4242 4242 4242 4242, ...),
 *    registry sample IBANs (DE89 3704 0044 0532 0130 00, ...), SSNs the SSA
 *    documents as invalid/advertising (078-05-1120, 219-09-9999, 123-45-6789).
 *  - Stripe publishable keys (pk_live_/pk_test_) and Mapbox public tokens (pk.eyJ…):
 *    designed to be public.
 *  - Twilio Account SIDs (AC + 32 hex) ARE reported (twilio_key) — they are half
 *    of the Basic-auth pair and cheap to redact; API key SIDs (SK…) too.
 *  - Placeholders: <...>, ${...}, {{...}}, $VAR, %VAR%, xxxx, ****, "changeme",
 *    "password", "somepassword", "your_…", "…_here", repeated or sequential characters.
 *  - Default credentials in connection strings (postgres:postgres, guest:guest,
 *    root:root, password equal to the user name): not secrets.
 *  - Generic `key = value` pairs need a credential-ish key name AND a value that
 *    looks generated (entropy / mixed character classes). Values made of words
 *    ("password=sunshine", "correct-horse-battery-staple", "KMS_DisabledException")
 *    and code (member access, calls, type names, `$VAR`) are not reported. Short
 *    passwords (< 8 chars) and 8-9 char ones with fewer than three character
 *    classes are not reported either.
 *  - Card-like numbers right after an order/invoice/tracking/id/phone label are
 *    not cards unless a card word (card, visa, cc, payment…) is also there.
 */
import { Buffer } from 'node:buffer';

export type FindingClass = 'secret' | 'pii' | 'contact';
export type Emit = (kind: string, start: number, end: number) => void;

export interface Rule {
  /** Default kind; `check` may return another kind. */
  kind: string;
  cls: FindingClass;
  /** Higher wins an overlap. */
  priority: number;
  /** Lower-case literals: the rule runs only if the lower-cased text contains one of them. */
  needles?: readonly string[];
  /** Regex with the `d` flag: global, or sticky when `prefixes` is set. */
  re?: RegExp;
  /**
   * Literal, case-sensitive token prefixes. The engine finds them all in one pass (at a left token
   * boundary) and runs the sticky `re` only there: linear even on adversarial input such as
   * "eyJeyJeyJ…", and far faster than one unanchored regex per vendor.
   */
  prefixes?: readonly string[];
  /** Capture group holding the secret (default: whole match). */
  group?: number;
  /** false rejects; a string overrides the kind. */
  check?: (value: string, text: string, start: number, end: number, m: RegExpExecArray) => boolean | string;
  /** Fully custom matcher (used instead of re). */
  scan?: (text: string, emit: Emit) => void;
}

// ---------------------------------------------------------------------------
// Priorities
const P_WRAPPER = 110; // a secret recognised by its container (GCP service-account JSON)
const P_VENDOR = 100; // distinctive vendor prefix
const P_PEM = 96;
const P_VENDOR_LOOSE = 92; // vendor-ish prefix shared by several vendors (sk-…)
const P_CONTEXT = 90; // vendor format recognised by the key name next to it
const P_JWT = 80;
const P_CONN = 70;
const P_PII = 60;
const P_GENERIC = 40;
const P_CONTACT = 20;

// ---------------------------------------------------------------------------
// Value helpers

export function shannonEntropy(s: string): number {
  if (!s) return 0;
  const freq = new Map<string, number>();
  for (const c of s) freq.set(c, (freq.get(c) ?? 0) + 1);
  let n = 0;
  for (const f of freq.values()) n += f;
  let h = 0;
  for (const f of freq.values()) {
    const p = f / n;
    h -= p * Math.log2(p);
  }
  return h;
}

interface Classes {
  lower: boolean;
  upper: boolean;
  digit: boolean;
  symbol: boolean;
  count: number;
}
function charClasses(s: string): Classes {
  const lower = /[a-z]/.test(s);
  const upper = /[A-Z]/.test(s);
  const digit = /[0-9]/.test(s);
  const symbol = /[^A-Za-z0-9]/.test(s);
  return { lower, upper, digit, symbol, count: +lower + +upper + +digit + +symbol };
}

/** Share of adjacent pairs that step by ±1 ("abcdef", "123456", "zyx"). */
function sequentialRatio(s: string): number {
  if (s.length < 2) return 0;
  let seq = 0;
  for (let i = 1; i < s.length; i++) {
    const d = s.charCodeAt(i) - s.charCodeAt(i - 1);
    if (d === 1 || d === -1) seq++;
  }
  return seq / (s.length - 1);
}

function distinctChars(s: string): number {
  return new Set(s).size;
}

const PLACEHOLDER_EXACT = new Set([
  'password',
  'passwd',
  'pass',
  'pwd',
  'secret',
  'secrets',
  'token',
  'apikey',
  'api_key',
  'api-key',
  'key',
  'changeme',
  'change_me',
  'admin',
  'administrator',
  'root',
  'toor',
  'guest',
  'user',
  'username',
  'test',
  'testing',
  'tester',
  'default',
  'letmein',
  'qwerty',
  'qwertyuiop',
  'hunter2',
  'foobar',
  'foo',
  'bar',
  'baz',
  'none',
  'null',
  'nil',
  'undefined',
  'true',
  'false',
  'yes',
  'no',
  'on',
  'off',
  'empty',
  'required',
  'optional',
  'string',
  'str',
  'value',
  'redacted',
  'hidden',
  'masked',
  'removed',
  'secret_key',
  'secretkey',
  'mypassword',
  'mysecret',
  'mytoken',
  'password1',
  'password123',
  'passw0rd',
  'p@ssw0rd',
  'p@ssword',
  'secret123',
  'abc123',
  'welcome',
  'welcome1',
  'supersecret',
  'topsecret',
  'dummy',
  'sample',
  'example',
  'placeholder',
  'todo',
  'tbd',
  'fixme',
  'unset',
  'notset',
  'not-set',
  'not_set',
  'na',
  'n/a',
  'xxx',
  'bearer',
  'basic',
  'oauth',
  'oauth2',
  'jwt',
  'env',
  'environment',
  'auto',
  'random',
  'generated',
  'generate',
  'secure',
  'insecure',
  'disabled',
  'enabled',
  'postgres',
  'postgresql',
  'mysql',
  'mariadb',
  'redis',
  'rabbitmq',
  'mongo',
  'mongodb',
  'elastic',
  'changeit',
  'masterkey',
  'sa',
  'demo',
  'local',
  'localhost',
  'dev',
  'development',
  'prod',
  'production',
  'staging',
  'devpassword',
  'testpassword',
  'testpass',
  'secretpassword',
  'mysecretpassword',
  'verysecret',
  'secretsecret',
  'keyboardcat',
  'keyboard cat',
  'string',
  'number',
  'boolean',
  'object',
  'any',
  'unknown',
  'str',
  'int',
  'bytes',
  'self',
  'this',
  'nothing',
  'empty_string',
]);

const PLACEHOLDER_PARTS = [
  'example',
  'placeholder',
  'changeme',
  'change_me',
  'change-me',
  'changethis',
  'change_this',
  'replace',
  'redacted',
  'dummy',
  'your_',
  'your-',
  'yourpass',
  'yoursecret',
  'yourtoken',
  'yourkey',
  'yourapi',
  'your api',
  'your key',
  'your password',
  'your token',
  'your secret',
  'youraccess',
  'your.',
  '{{',
  '}}',
  '${',
  '$(',
  '%(',
  '#{',
  'xxxx',
  '****',
  '•••',
  '…',
  '...',
  'lorem',
  'insert_',
  'insert-',
  '_here',
  '-here',
  'notreal',
  'not_real',
  'not-real',
  'not_a_real',
  'not-a-real',
  'fake_',
  'fake-',
  'sample_',
  'sample-',
  'process.env',
  'os.environ',
  'getenv',
  'env(',
  'env[',
  'secretkeyref',
  'valuefrom',
  '[redacted',
  '[hidden',
  '[filtered',
  '[masked',
];

/** Credentials published in vendor documentation (public, not secrets). */
const KNOWN_EXAMPLES = new Set([
  'sk_test_4eC39HqLyjWDarjtT1zdp7dc',
  'sk_test_BQokikJOvBiI2HlWgH4olfQ2',
  'sk_test_26PHem9AhJZvU623DfE1x4sd',
  'rk_test_26PHem9AhJZvU623DfE1x4sd',
  'whsec_1234567890abcdef',
  '123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11',
]);

/** Placeholders and templating, for values that are only secrets by context (generic rules). */
export function isPlaceholder(value: string): boolean {
  const v = value.trim();
  if (v.length < 4) return true;
  const lower = v.toLowerCase();
  if (PLACEHOLDER_EXACT.has(lower) || KNOWN_EXAMPLES.has(v)) return true;
  for (const p of PLACEHOLDER_PARTS) if (lower.includes(p)) return true;
  if (/^\$[A-Za-z_][A-Za-z0-9_]*$/.test(v) || /^\$\{?[A-Za-z_]/.test(v) || /^%[A-Za-z_][A-Za-z0-9_]*%$/.test(v)) return true;
  if (/^:[a-z_]+$/.test(v) || /^%[sd]$/.test(v) || /^\?+$/.test(v)) return true;
  if (/^\[REDACTED:/i.test(v)) return true;
  if (/<[A-Za-z][A-Za-z0-9 _.-]{0,40}>|^<|>$/.test(v)) return true; // <your-password>, <paste here>
  if (/^[a-z_.-]*(?:password|passwd|passphrase|secret|token|apikey|pass|pwd)[a-z_.-]*[0-9!]{0,6}$/i.test(v)) return true; // "somepassword", "mysecret1"

  if (/\$\{?[A-Z][A-Z0-9_]{2,}\}?/.test(v)) return true; // $HOME, ${DB_PASS} inside a value
  if (/^pk_(?:live|test)_|^pk\.eyJ/.test(v)) return true; // publishable keys (Stripe, Mapbox) are public
  if (/(.)\1{5,}/.test(v)) return true;
  if (v.length >= 6 && distinctChars(v) <= 3) return true;
  if (v.length >= 6 && sequentialRatio(v) >= 0.6) return true;
  return false;
}

/** Lighter test for the random part of a prefixed vendor token. */
export function isVendorPlaceholder(value: string): boolean {
  const lower = value.toLowerCase();
  if (/example|xxxx|your|placeholder|redacted|dummy|\.\.\.|…|<|>|\{|\}|\$|\*\*\*|_here|-here/.test(lower)) return true;
  if (/(.)\1{6,}/.test(value)) return true;
  if (value.length >= 8 && distinctChars(value) <= 4) return true;
  if (value.length >= 8 && sequentialRatio(value) >= 0.5) return true;
  return false;
}

const ACRONYMS = new Set(
  (
    'a i o x v id io db ui js ts http https xml sql jwt kms ssr ssh tls ssl dns tcp udp html css rpc grpc cdn crm pkcs hmac ' +
    'rsa dsa pgp gpg std src dst cfg ctx msg req res cb fn tmp str num len max min ws wss ids url uri dir env pwd cwd api sdk ' +
    'cli tx rx mfa otp sms smtp imap pop ftp sftp jwk jwks oidc saml ldap acl iam arn vpc dm pm am utc gmt by my of to in on at'
  ).split(' '),
);

function isWordlikeSegment(s: string): boolean {
  const vowels = (s.match(/[aeiouy]/gi) ?? []).length;
  if (s.length >= 3 && /^[A-Za-z]+$/.test(s) && vowels / s.length >= 0.15 && !/[bcdfghjklmnpqrstvwxz]{5,}/i.test(s)) return true;
  return (s.length <= 5 && s.length >= 2 && s === s.toUpperCase() && /^[A-Z]+$/.test(s)) || ACRONYMS.has(s.toLowerCase());
}

/**
 * Made of words: identifiers and phrases ("KMS_DisabledException", "OAuthCredentials",
 * "Uint8Array", "Missing Key", "CorrectHorseBatteryStaple") rather than generated characters.
 */
export function isWordy(v: string): boolean {
  const digits = (v.match(/\d/g) ?? []).length;
  if (digits > 2) return false;
  const segs = v
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[^A-Za-z]+/)
    .filter(Boolean);
  let letters = 0;
  let wordLetters = 0;
  for (const s of segs) {
    letters += s.length;
    if (isWordlikeSegment(s)) wordLetters += s.length;
  }
  if (letters < 4) return false;
  const singles = segs.filter((s) => s.length === 1).length;
  return wordLetters / letters >= 0.85 && singles <= 2;
}

/** True when a (context-found) value looks generated rather than a word, a name or a reference. */
export function looksSecret(value: string): boolean {
  const v = value;
  if (isPlaceholder(v)) return false;
  if (v.length < 8) return false;
  if (/^\d+$/.test(v)) return false; // numbers, PINs, ports, timestamps
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(v)) return false; // URLs (connection strings have their own rule)
  if (/^(?:\.{0,2}\/|~\/|[A-Za-z]:\\)/.test(v)) return false; // paths
  if (/^\d+(?:[.:/_-]\d+)+[A-Za-z]?$/.test(v)) return false; // dates, versions, times
  if (/^v?\d+\.\d+(?:\.\d+)?(?:-[A-Za-z0-9.]+)?$/.test(v)) return false; // semver
  if (/^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/.test(v)) return false; // ENV_VAR_NAME reference
  if (/^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+(?:\(\)?)?$/.test(v) && !/\d{3}/.test(v)) return false; // a.b.c member access
  if (/^[a-z]+(?:[-_ ][a-z]+)+$/.test(v)) return false; // lowercase words joined
  if (/^[A-Z]?[a-z]+(?:[A-Z][a-z]+)+$/.test(v)) return false; // CamelCaseWords
  if (isWordy(v)) return false;
  const h = shannonEntropy(v);
  const c = charClasses(v);
  if (v.length >= 16 && h >= 3.5) return true;
  if (v.length >= 20 && /^[0-9a-f]+$/i.test(v) && h >= 3.0) return true;
  if (v.length >= 8 && c.count >= 3 && h >= 2.5) return true;
  if (v.length >= 10 && c.digit && (c.lower || c.upper) && h >= 3.0) return true;
  return false;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Stricter: for key names that are only weakly credential-ish ("key", "foo_key"). */
function looksStronglyRandom(value: string): boolean {
  if (!looksSecret(value)) return false;
  if (UUID_RE.test(value)) return false;
  if (/^[0-9a-f]+$/i.test(value) && [32, 40, 64, 128].includes(value.length)) return false; // digests
  return value.length >= 20 && shannonEntropy(value) >= 3.7;
}

export function luhnValid(digits: string): boolean {
  let sum = 0;
  let dbl = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return false;
    if (dbl) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    dbl = !dbl;
  }
  return sum % 10 === 0;
}

/** IBAN lengths by country (SWIFT registry). */
export const IBAN_LENGTHS: Readonly<Record<string, number>> = {
  AD: 24,
  AE: 23,
  AL: 28,
  AT: 20,
  AZ: 28,
  BA: 20,
  BE: 16,
  BG: 22,
  BH: 22,
  BI: 27,
  BR: 29,
  BY: 28,
  CH: 21,
  CR: 22,
  CY: 28,
  CZ: 24,
  DE: 22,
  DJ: 27,
  DK: 18,
  DO: 28,
  EE: 20,
  EG: 29,
  ES: 24,
  FI: 18,
  FK: 18,
  FO: 18,
  FR: 27,
  GB: 22,
  GE: 22,
  GI: 23,
  GL: 18,
  GR: 27,
  GT: 28,
  HR: 21,
  HU: 28,
  IE: 22,
  IL: 23,
  IQ: 23,
  IS: 26,
  IT: 27,
  JO: 30,
  KW: 30,
  KZ: 20,
  LB: 28,
  LC: 32,
  LI: 21,
  LT: 20,
  LU: 20,
  LV: 21,
  LY: 25,
  MC: 27,
  MD: 24,
  ME: 22,
  MK: 19,
  MN: 20,
  MR: 27,
  MT: 31,
  MU: 30,
  NI: 28,
  NL: 18,
  NO: 15,
  OM: 23,
  PK: 24,
  PL: 28,
  PS: 29,
  PT: 25,
  QA: 29,
  RO: 24,
  RS: 22,
  RU: 33,
  SA: 24,
  SC: 31,
  SD: 18,
  SE: 24,
  SI: 19,
  SK: 24,
  SM: 27,
  SO: 23,
  ST: 25,
  SV: 28,
  TL: 23,
  TN: 24,
  TR: 26,
  UA: 29,
  VA: 22,
  VG: 24,
  XK: 20,
  YE: 30,
};

/** mod-97 check of a compact, upper-case IBAN. */
export function ibanValid(iban: string): boolean {
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]+$/.test(iban)) return false;
  if (IBAN_LENGTHS[iban.slice(0, 2)] !== iban.length) return false;
  const r = iban.slice(4) + iban.slice(0, 4);
  let rem = 0;
  for (const ch of r) {
    const code = ch.charCodeAt(0);
    const v = code >= 65 ? code - 55 : code - 48;
    rem = v >= 10 ? (rem * 100 + v) % 97 : (rem * 10 + v) % 97;
  }
  return rem === 1;
}

function b64urlJson(seg: string): unknown {
  try {
    const s = Buffer.from(seg, 'base64url').toString('utf8');
    if (!s.startsWith('{')) return undefined;
    return JSON.parse(s) as unknown;
  } catch {
    return undefined;
  }
}

function lineAround(text: string, start: number, end: number, max = 300): { before: string; after: string } {
  let a = start;
  const aMin = Math.max(0, start - max);
  while (a > aMin && text[a - 1] !== '\n') a--;
  let b = end;
  const bMax = Math.min(text.length, end + max);
  while (b < bMax && text[b] !== '\n') b++;
  return { before: text.slice(a, start), after: text.slice(end, b) };
}

// ---------------------------------------------------------------------------
// Key names ("DB_PASSWORD", "apiKey", "X-Api-Key", "client_secret")

export function splitWords(ident: string): string[] {
  return ident
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

const STRONG_WORDS = new Set([
  'password',
  'passwd',
  'pwd',
  'pw',
  'pass',
  'passphrase',
  'passcode',
  'secret',
  'token',
  'apikey',
  'secretkey',
  'accesskey',
  'privatekey',
  'clientsecret',
  'accesstoken',
  'authtoken',
  'refreshtoken',
  'bearer',
  'authorization',
  'credential',
  'credentials',
  'auth',
  'creds',
  'cred',
  'pat',
  'sessionid',
  'session',
  'cookie',
  'signature',
  'sig',
  'hmac',
  'salt',
  'pepper',
]);
/** Concatenated lower-case names ending in these ("dbpassword", "mysqlpwd", "githubtoken"). */
const STRONG_SUFFIXES = ['password', 'passwd', 'passphrase', 'secret', 'token', 'apikey', 'secretkey', 'accesskey', 'privatekey', 'pwd'];
/** Words that make "key" a credential. */
const KEY_QUALIFIERS = new Set([
  'api',
  'access',
  'secret',
  'private',
  'signing',
  'sign',
  'encryption',
  'encrypt',
  'crypt',
  'crypto',
  'master',
  'session',
  'auth',
  'app',
  'application',
  'account',
  'client',
  'consumer',
  'license',
  'licence',
  'shared',
  'hmac',
  'jwt',
  'storage',
  'service',
  'subscription',
  'webhook',
  'admin',
  'write',
  'read',
  'deploy',
  'root',
  'security',
  'server',
  'dev',
  'developer',
  'live',
  'prod',
  'test',
  'personal',
  'integration',
  'cipher',
  'aes',
  'symmetric',
  'decryption',
  'sas',
  'partner',
  'merchant',
  'mgmt',
  'management',
  'ingest',
  'ingestion',
  'token',
  'password',
  'x',
  'user',
]);
/** Words that make "key"/"token"/... NOT a credential (ids, cursors, schema). */
const NON_SECRET_PRE = new Set([
  'next',
  'prev',
  'previous',
  'page',
  'pagination',
  'continuation',
  'cursor',
  'max',
  'min',
  'num',
  'total',
  'count',
  'prompt',
  'completion',
  'input',
  'output',
  'eos',
  'bos',
  'pad',
  'unk',
  'sep',
  'cls',
  'mask',
  'special',
  'stop',
  'start',
  'end',
  'vocab',
  'csrf',
  'xsrf',
  'sync',
  'cancellation',
  'cancel',
  'cache',
  'primary',
  'foreign',
  'sort',
  'partition',
  'idempotency',
  'composite',
  'unique',
  'lookup',
  'hash',
  'row',
  'object',
  'bucket',
  'map',
  'dict',
  'public',
  'pub',
  'registry',
  'routing',
  'group',
  'message',
  'event',
  'dedup',
  'dedupe',
  'deduplication',
  'i18n',
  'translation',
  'locale',
  'list',
  'item',
  'index',
  'react',
  'shortcut',
  'hot',
  'hotkey',
  'keyboard',
  'press',
  'sorting',
  'range',
  'hash',
  'dictionary',
  'state',
  'storage_',
  'column',
  'field',
  'rate',
  'reset',
  'forgot',
  'forgotten',
  'change',
  'new_',
  'old_',
  'show',
  'hide',
  'toggle',
  'confirm',
  'retype',
  'min_',
  'policy',
  'expiry',
  'has',
  'is',
  'use',
  'allow',
  'require',
  'enable',
  'disable',
  'no',
  'auth_type',
  'type',
  'design',
  'word',
  'image',
  'ingress',
  'tls',
  'ssl',
  'known',
  'ssh',
  'gpg',
  'pgp',
  'fingerprint',
  'thumb',
  'thumbprint',
  'publishable',
  'publisher',
  'client_id',
  'site',
  'per',
]);
/** The same, for concatenated lower-case names ("nexttoken", "csrftoken", "resetpassword"). */
const CONCAT_NON_SECRET_PRE = [
  'next',
  'page',
  'max',
  'min',
  'num',
  'csrf',
  'xsrf',
  'cancel',
  'reset',
  'forgot',
  'show',
  'hide',
  'toggle',
  'confirm',
  'retype',
  'cursor',
  'continuation',
  'pagination',
  'sync',
  'prompt',
  'completion',
  'input',
  'output',
  'special',
  'vocab',
];
/** Words allowed after the credential word ("SECRET_KEY_BASE", "API_TOKEN_PROD"). */
const ALLOWED_TRAIL = new Set([
  'key',
  'base',
  'value',
  'val',
  'str',
  'string',
  'b64',
  'base64',
  'hex',
  'raw',
  'enc',
  'encrypted',
  'prod',
  'production',
  'dev',
  'development',
  'staging',
  'stage',
  'test',
  'live',
  'sandbox',
  'local',
  'new',
  'old',
  'current',
  'primary',
  'secondary',
  'plain',
  'plaintext',
  'text',
  'data',
  'confirmation',
  'confirm',
  'again',
  'repeat',
  'default',
  'override',
  'main',
  'secret',
  'token',
  'pass',
  'password',
  'bytes',
  'material',
  'v1',
  'v2',
  'v3',
  'access',
  'bot',
  'api',
  'ci',
  'admin',
  'user',
  'root',
  'master',
  'global',
  'personal',
  'app',
]);
const NON_SECRET_TRAIL_FOR_PASS = new Set(['through', 'thru', 'rate', 'count', 'fail', 'ok']);

export type KeyStrength = 'strong' | 'medium' | 'weak';

/** How strongly an identifier names a credential (null: not at all). */
export function keyNameStrength(ident: string): KeyStrength | null {
  const words = splitWords(ident);
  if (!words.length) return null;
  for (let i = words.length - 1; i >= 0; i--) {
    const w = words[i]!;
    const prev = words[i - 1];
    let kind: KeyStrength | null = null;
    if (STRONG_WORDS.has(w)) kind = 'strong';
    else if (w === 'key' || w === 'keys') {
      if (prev && KEY_QUALIFIERS.has(prev)) kind = 'strong';
      else if (prev && NON_SECRET_PRE.has(prev)) return null;
      else kind = prev ? 'medium' : 'weak';
    } else if (w.length > 6 && STRONG_SUFFIXES.some((s) => w.endsWith(s))) {
      if (CONCAT_NON_SECRET_PRE.some((p) => w.startsWith(p))) return null;
      kind = 'strong';
    }
    if (!kind) continue;
    const trail = words.slice(i + 1);
    if (!trail.every((t) => ALLOWED_TRAIL.has(t) || /^\d+$/.test(t) || /^v\d+$/.test(t))) return null;
    if ((w === 'pass' || w === 'pw') && trail.some((t) => NON_SECRET_TRAIL_FOR_PASS.has(t))) return null;
    if (prev && NON_SECRET_PRE.has(prev) && w !== 'password' && w !== 'secret') return null;
    if (
      prev &&
      (w === 'password' || w === 'pass' || w === 'passwd') &&
      [
        'reset',
        'forgot',
        'forgotten',
        'change',
        'show',
        'hide',
        'toggle',
        'min',
        'max',
        'policy',
        'expiry',
        'is',
        'has',
        'require',
        'use',
        'allow',
        'enable',
        'disable',
        'no',
      ].includes(prev)
    )
      return null;
    if (
      (w === 'session' || w === 'cookie' || w === 'signature' || w === 'sig' || w === 'salt' || w === 'hmac' || w === 'pat' || w === 'cred' || w === 'creds') &&
      kind === 'strong'
    )
      kind = 'medium';
    return kind;
  }
  return null;
}

// ---------------------------------------------------------------------------
// Value parsing after "name =" / "name:"

interface ParsedValue {
  start: number;
  end: number;
  quoted: boolean;
  scheme?: string;
}

const SCHEME_RE = /^(Bearer|Basic|Token|Bot|Digest|token|bearer|basic|BEARER|BASIC)[ ]+(?=\S)/;

/** Reads the value starting at `pos`: optional (escaped) quote, optional auth scheme word. */
export function parseValue(text: string, pos: number): ParsedValue | null {
  const n = text.length;
  let i = pos;
  let quote = '';
  let escaped = false;
  if (text[i] === '\\' && (text[i + 1] === '"' || text[i + 1] === "'")) {
    escaped = true;
    quote = text[i + 1]!;
    i += 2;
  } else if (text[i] === '"' || text[i] === "'" || text[i] === '`') {
    quote = text[i]!;
    i++;
  }
  let scheme: string | undefined;
  const sm = SCHEME_RE.exec(text.slice(i, i + 12));
  if (sm) {
    scheme = sm[1]!.toLowerCase();
    i += sm[0].length;
  }
  const start = i;
  const limit = Math.min(n, i + 2048);
  if (quote) {
    while (i < limit) {
      const c = text[i]!;
      if (c === '\n' || c === '\r') break;
      if (escaped && c === '\\') break;
      if (!escaped && c === quote) break;
      if (!escaped && c === '\\') {
        i += 2;
        continue;
      }
      if (scheme && c === ' ') break;
      i++;
    }
    if (i > limit) i = limit;
  } else {
    while (i < limit) {
      const c = text[i]!;
      if (
        c === ' ' ||
        c === '\t' ||
        c === '\n' ||
        c === '\r' ||
        c === '"' ||
        c === "'" ||
        c === '`' ||
        c === ',' ||
        c === ';' ||
        c === '&' ||
        c === '\\' ||
        c === '<' ||
        c === '>'
      )
        break;
      if (c === '=' && i > start && text[i - 1] !== '=' && /[A-Za-z_$(]/.test(text[i + 1] ?? '')) break; // "a=b=c": next assignment
      i++;
    }
    if (!text.slice(start, i).endsWith('..')) while (i > start && '.)]}:'.includes(text[i - 1]!)) i--;
  }
  if (i <= start) return null;
  return { start, end: i, quoted: !!quote, scheme };
}

/** Unquoted code expressions that merely reference a secret. */
function isCodeLike(v: string): boolean {
  if (/[()[\]]/.test(v)) return true;
  if (/^[\d.]+\s*[-+*/%]\s*[A-Za-z_]/.test(v)) return true; // arithmetic
  if (
    /^[A-Za-z_$][\w$]*$/.test(v) &&
    /_/.test(v) &&
    v
      .split(/_+/)
      .filter(Boolean)
      .every((w) => /^\d+$/.test(w) || isWordy(w) || isWordlikeSegment(w))
  )
    return true; // snake_case identifier
  if (/^!(?=[A-Za-z_$][\w$.]*$)|\?\.|\?\?|=>|&&|\|\|/.test(v)) return true;
  if (/^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$/.test(v)) return true;
  if (/^(?:self|this|config|settings|options|opts|env|params|args|req|request|ctx|context|props|state|data|cfg)\b/.test(v)) return true;
  return false;
}

function basicAuthOk(b64: string): boolean {
  if (!/^[A-Za-z0-9+/]{6,}={0,2}$/.test(b64)) return false;
  const dec = Buffer.from(b64, 'base64').toString('utf8');
  const m = /^([^:\s]{1,200}):(\S{3,200})$/.exec(dec);
  if (!m) return false;
  const pw = m[2]!;
  return !isPlaceholder(pw) && pw !== m[1];
}

/** Decide whether the parsed value after a credential-ish name is a secret. */
function judgeValue(text: string, pv: ParsedValue, strength: KeyStrength): boolean {
  let v = text.slice(pv.start, pv.end);
  if (/%[0-9A-Fa-f]{2}/.test(v)) {
    try {
      v = decodeURIComponent(v);
    } catch {
      /* keep */
    }
  }
  if (pv.scheme === 'basic') return basicAuthOk(v);
  if (!pv.quoted && isCodeLike(v)) return false;
  if (v.startsWith('-----BEGIN')) return false; // PEM rule handles it
  if (strength !== 'strong' && (/\s/.test(v) || /["{}]/.test(v))) return false;
  if (strength === 'weak') return looksStronglyRandom(v);
  if (strength === 'medium') return looksSecret(v) && (v.length >= 16 || charClasses(v).count >= 3) && !UUID_RE.test(v);
  return looksSecret(v);
}

// ---------------------------------------------------------------------------
// Custom scanners

const KEYWORDISH_RE = /pass|pw|secret|token|key|auth|cred|bearer|session|cookie|sig|hmac|salt|pepper|pat/i;
const KV_RE = /(?<![A-Za-z0-9_.$-])(-{0,2}[A-Za-z_$@][A-Za-z0-9_.$-]{0,80})(\\?["'`])?\]?[ \t]*(?::=|=>|=|:)(?![=:/])[ \t]*/g;
const CONN_CONTEXT_RE = /:\/\/|jdbc:|\b(?:server|data source|host|address|addr)\s*=|\bdatabase\s*=/i;

function scanKeyValues(text: string, emit: Emit): void {
  KV_RE.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = KV_RE.exec(text))) {
    const ident = m[1]!;
    if (!KEYWORDISH_RE.test(ident)) continue;
    const strength = keyNameStrength(ident.replace(/^-+/, ''));
    if (!strength) continue;
    const pv = parseValue(text, KV_RE.lastIndex);
    if (!pv) continue;
    if (!judgeValue(text, pv, strength)) continue;
    const pre = text[m.index - 1];
    let kind = 'generic_secret';
    if (pre === '?' || pre === '&' || pre === ';') {
      const { before, after } = lineAround(text, m.index, pv.end);
      if (CONN_CONTEXT_RE.test(before + after)) kind = 'connection_string';
    }
    emit(kind, pv.start, pv.end);
    if (pv.end > KV_RE.lastIndex && pv.quoted) KV_RE.lastIndex = pv.end;
  }
}

/** `- name: DB_PASSWORD\n  value: "…"` and `{"name": "API_TOKEN", "value": "…"}` (k8s, ECS, GitHub API). */
const NAME_VALUE_RE =
  /\\?["']?\b(?:name|key|Name|Key)\\?["']?[ \t]*[:=][ \t]*\\?["']?([A-Za-z_][A-Za-z0-9_.-]{1,80})\\?["']?[ \t]*,?(?:\s|\\[nrt]){0,40}\\?["']?(?:value|Value)\\?["']?[ \t]*[:=][ \t]*/g;
function scanNameValue(text: string, emit: Emit): void {
  NAME_VALUE_RE.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = NAME_VALUE_RE.exec(text))) {
    const strength = keyNameStrength(m[1]!);
    if (!strength) continue;
    const pv = parseValue(text, NAME_VALUE_RE.lastIndex);
    if (pv && judgeValue(text, pv, strength)) emit('generic_secret', pv.start, pv.end);
  }
}

/** Chat prose: "my password is Tr0ub4dor&3", "the api key is …". */
const PROSE_RE =
  /\b(?:password|passcode|passphrase|pwd|api[ -]?key|secret key|access key|secret|token|pin code)\s+(?:is|was|is now|will be|=|:|to|set to|changed to)\s+/gi;
function scanProse(text: string, emit: Emit): void {
  PROSE_RE.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = PROSE_RE.exec(text))) {
    const pv = parseValue(text, PROSE_RE.lastIndex);
    if (!pv) continue;
    let end = pv.end;
    while (end > pv.start && '.,;:!?)]}"\''.includes(text[end - 1]!)) end--;
    const v = text.slice(pv.start, end);
    if (v.length >= 8 && looksSecret(v) && !isCodeLike(v)) emit('generic_secret', pv.start, end);
  }
}

/** CLI forms: curl -u user:pass, --password value, mysql -pSECRET, .netrc, sshpass -p. */
const CLI_RES: Array<[RegExp, number]> = [
  [/\b(?:curl|wget|http|https|xh|httpie)\b[^\n]{0,300}?[\s"'`](?:-u|--user|--proxy-user)[ \t]+["']?[^\s:"']{1,100}:([^\s"']{3,200})/g, 1],
  [
    /(?:^|\s)--(?:password|passwd|pass|pwd|token|secret|api-key|apikey|access-key|secret-key|auth-token|client-secret|db-password|admin-password)[ \t]+["']?([^\s"'-][^\s"']{2,200})/g,
    1,
  ],
  [/\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]{0,200}?\s-p([^\s"'-][^\s"']{2,100})/g, 1],
  [/\bsshpass\s+-p\s*["']?([^\s"']{3,100})/g, 1],
  [/\bmachine\s+\S+\s+login\s+\S+\s+password\s+(\S{3,200})/g, 1],
];
/** Code and config forms without a plain "name = value": SQL, PHP define(), XML elements, auth tuples. */
const CODE_RES: Array<[RegExp, number, number]> = [
  // [regex, name group (0: none), value group]
  [/\b(?:PASSWORD|IDENTIFIED\s+BY)\s+'([^'\n]{3,200})'/gi, 0, 1],
  [/\bdefine\(\s*['"]([A-Za-z0-9_]{2,80})['"]\s*,\s*'([^'\n]{1,300})'/g, 1, 2],
  [/\bdefine\(\s*['"]([A-Za-z0-9_]{2,80})['"]\s*,\s*"([^"\n]{1,300})"/g, 1, 2],
  [/<([A-Za-z_][\w.:-]{0,60})(?:\s[^<>]{0,200})?>([^<>\n]{1,300})<\/\1>/g, 1, 2],
  [
    /\b(?:auth\s*=\s*\(|HTTPBasicAuth\(|HTTPDigestAuth\(|BasicAuth\(|basic_auth\(|setBasicAuth\()\s*["'][^"'\n]{1,100}["']\s*,\s*["']([^"'\n]{3,200})["']/g,
    0,
    1,
  ],
];
function scanCodeForms(text: string, emit: Emit): void {
  for (const [re, nameGroup, valueGroup] of CODE_RES) {
    re.lastIndex = 0;
    let m: RegExpExecArray | null;
    while ((m = re.exec(text))) {
      const strength: KeyStrength | null = nameGroup ? keyNameStrength(m[nameGroup]!) : 'strong';
      if (!strength) continue;
      const raw = m[valueGroup]!;
      const v = raw.trim();
      const start = m.index + m[0].lastIndexOf(raw) + raw.indexOf(v);
      if (judgeValue(text, { start, end: start + v.length, quoted: true }, strength)) emit('generic_secret', start, start + v.length);
    }
  }
}

/** Azure AD client secrets: 3 chars, a digit, "Q~", 31-34 more (anchored on "Q~"). */
function scanAzureClientSecret(text: string, emit: Emit): void {
  let i = text.indexOf('Q~');
  while (i >= 0) {
    const start = i - 4;
    const m = start >= 0 ? /^[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])/.exec(text.slice(start, start + 44)) : null;
    if (m && leftBoundary(text, start) && text[start - 1] !== '~' && text[start - 1] !== '.' && mixed(m[0]) && !isVendorPlaceholder(m[0].slice(6))) {
      emit('azure_client_secret', start, start + m[0].length);
    }
    i = text.indexOf('Q~', i + 2);
  }
}

/** Terraform Cloud / Enterprise tokens: 14 chars ".atlasv1." 60+ chars. */
function scanTerraformToken(text: string, emit: Emit): void {
  let i = text.indexOf('.atlasv1.');
  while (i >= 0) {
    const start = i - 14;
    if (start >= 0 && /^[A-Za-z0-9]{14}$/.test(text.slice(start, i)) && leftBoundary(text, start)) {
      const m = /^[A-Za-z0-9_-]{60,120}(?![A-Za-z0-9_-])/.exec(text.slice(i + 9, i + 9 + 121));
      if (m) emit('terraform_token', start, i + 9 + m[0].length);
    }
    i = text.indexOf('.atlasv1.', i + 9);
  }
}

function scanCli(text: string, emit: Emit): void {
  for (const [re, g] of CLI_RES) {
    re.lastIndex = 0;
    let m: RegExpExecArray | null;
    while ((m = re.exec(text))) {
      const v = m[g]!;
      const start = m.index + m[0].length - v.length;
      if (looksSecret(v) && !isCodeLike(v)) emit('generic_secret', start, start + v.length);
    }
  }
}

/** PEM private keys, multi-line or with JSON "\n" escapes; truncated ones (no END) too. */
const PEM_BEGIN_RE = /-----BEGIN ((?:[A-Z0-9]+ ){0,3})PRIVATE KEY( BLOCK)?-----/g;
const PEM_END_RE = /-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----/g;
const PEM_BODY_RE = /(?:[A-Za-z0-9+/=]|\s|\\[nrt]|(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset):[^\n\\]*)*/y;
function scanPem(text: string, emit: Emit): void {
  const MAX_BODY = 65536;
  // Cached next END / BEGIN markers: both only move forward, so the whole scan stays linear.
  let endAt = -1;
  let endLen = 0;
  const nextEnd = (from: number) => {
    if (endAt !== Infinity && endAt < from) {
      PEM_END_RE.lastIndex = from;
      const e = PEM_END_RE.exec(text);
      endAt = e ? e.index : Infinity;
      endLen = e ? e[0].length : 0;
    }
    return endAt;
  };
  let beginAt = -1;
  const nextBegin = (from: number) => {
    if (beginAt !== Infinity && beginAt < from) {
      const i = text.indexOf('-----BEGIN ', from);
      beginAt = i < 0 ? Infinity : i;
    }
    return beginAt;
  };
  PEM_BEGIN_RE.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = PEM_BEGIN_RE.exec(text))) {
    const bodyStart = PEM_BEGIN_RE.lastIndex;
    const e = nextEnd(bodyStart);
    let body: string;
    let end: number;
    if (e - bodyStart <= MAX_BODY && e < nextBegin(bodyStart)) {
      body = text.slice(bodyStart, e);
      end = e + endLen;
    } else {
      // no END marker (truncated paste): the key runs as far as base64 body text does
      PEM_BODY_RE.lastIndex = bodyStart;
      const b = PEM_BODY_RE.exec(text);
      body = b ? b[0].slice(0, MAX_BODY) : '';
      let bodyEnd = bodyStart + body.length;
      while (bodyEnd > bodyStart && /\s/.test(text[bodyEnd - 1]!)) bodyEnd--;
      end = bodyEnd;
    }
    const b64 = body
      .replace(/\\[nrt]/g, ' ')
      .replace(/^(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset):.*$/gm, '')
      .replace(/[^A-Za-z0-9+/=]/g, '');
    if (end > PEM_BEGIN_RE.lastIndex) PEM_BEGIN_RE.lastIndex = end;
    if (b64.length < 64) continue;
    if (/[xX*]{8,}|(.)\1{24,}/.test(b64)) continue;
    if (/\.\.\.|…|<|>/.test(body) && b64.length < 200) continue;
    emit('private_key', m.index, end);
  }
}

/** Sample IBANs from the ISO 13616 registry / bank documentation. */
const KNOWN_EXAMPLE_IBANS = new Set([
  'DE89370400440532013000',
  'GB29NWBK60161331926819',
  'GB82WEST12345698765432',
  'GB33BUKB20201555555555',
  'FR1420041010050500013M02606',
  'FR7630006000011234567890189',
  'NL91ABNA0417164300',
  'BE68539007547034',
  'BE71096123456769',
  'NO9386011117947',
  'CH9300762011623852957',
  'ES9121000418450200051332',
  'IT60X0542811101000000123456',
  'AT611904300234573201',
  'PL61109010140000071219812874',
  'TR330006100519786457841326',
  'DK5000400440116243',
  'FI2112345600000785',
  'SE4550000000058398257466',
  'IE29AIBK93115212345678',
  'PT50000201231234567890154',
  'LU280019400644750000',
  'CY17002001280000001200527600',
  'SA0380000000608010167519',
  'AE070331234567890123456',
  'HU42117730161111101800000000',
  'CZ6508000000192000145399',
  'GR1601101250000000012300695',
  'MT84MALT011000012345MTLCAST001S',
]);

/** Mailgun's newer key format: 32 hex, 8 hex, 8 hex (anchored on the dashes: fast on long inputs). */
const MAILGUN_TAIL_RE = /-[0-9a-f]{8}-[0-9a-f]{8}(?![A-Za-z0-9_-])/g;
function scanMailgunNew(text: string, emit: Emit): void {
  MAILGUN_TAIL_RE.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = MAILGUN_TAIL_RE.exec(text))) {
    const start = m.index - 32;
    if (start < 0 || !/^[0-9a-f]{32}$/.test(text.slice(start, m.index))) continue;
    if (!leftBoundary(text, start)) continue;
    const v = text.slice(start, m.index + m[0].length);
    if (shannonEntropy(v) >= 3.2 && !isVendorPlaceholder(v)) emit('mailgun_key', start, m.index + m[0].length);
  }
}

/** IBANs: country code, check digits, BBAN (optionally grouped by 4 with spaces), mod-97. */
const IBAN_START_RE = /(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?=[ ]?[A-Z0-9])/g;
function scanIban(text: string, emit: Emit): void {
  IBAN_START_RE.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = IBAN_START_RE.exec(text))) {
    const len = IBAN_LENGTHS[m[0].slice(0, 2)];
    if (!len) continue;
    let i = m.index;
    let compact = '';
    let spaced = false;
    while (i < text.length && compact.length < len) {
      const c = text[i]!;
      if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
        compact += c;
        i++;
      } else if (c === ' ' && compact.length % 4 === 0 && compact.length > 0 && /[A-Z0-9]/.test(text[i + 1] ?? '')) {
        spaced = true;
        i++;
      } else break;
    }
    if (compact.length !== len) continue;
    if (/[A-Za-z0-9]/.test(text[i] ?? '')) continue;
    if (spaced && text[i] === ' ' && /[A-Z0-9]/.test(text[i + 1] ?? '') && compact.length % 4 === 0) {
      // a longer grouped run: the next group would continue it
      const rest = /^ [A-Z0-9]{1,4}(?![A-Za-z0-9])/.exec(text.slice(i, i + 6));
      if (rest) continue;
    }
    if (!ibanValid(compact)) continue;
    if (KNOWN_EXAMPLE_IBANS.has(compact) || /0{8,}/.test(compact)) continue;
    emit('iban', m.index, i);
    IBAN_START_RE.lastIndex = i;
  }
}

// ---------------------------------------------------------------------------
// Cards, SSNs, phones, e-mail

const TEST_CARDS = new Set([
  '4111111111111111',
  '4242424242424242',
  '4000056655665556',
  '4012888888881881',
  '4222222222222',
  '5555555555554444',
  '5105105105105100',
  '5200828282828210',
  '2223003122003222',
  '378282246310005',
  '371449635398431',
  '378734493671000',
  '6011111111111117',
  '6011000990139424',
  '3056930009020004',
  '36227206271667',
  '30569309025904',
  '38520000023237',
  '3566002020360505',
  '3530111333300000',
  '6200000000000005',
  '4000000000000002',
  '4000000000009995',
  '4000002500003155',
  '5431111111111111',
  '4917610000000000',
  '4444333322221111',
  '6011601160116611',
  '4007000000027',
  '4012000033330026',
  '4000000000000077',
  '4000000000000010',
]);

function cardBrandOk(d: string): boolean {
  const len = d.length;
  const p2 = +d.slice(0, 2);
  const p3 = +d.slice(0, 3);
  const p4 = +d.slice(0, 4);
  const p6 = +d.slice(0, 6);
  if (d[0] === '4') return len === 13 || len === 16 || len === 19; // Visa
  if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) return len === 16; // Mastercard
  if (p2 === 34 || p2 === 37) return len === 15; // Amex
  if (p4 === 6011 || p2 === 65 || (p3 >= 644 && p3 <= 649) || (p6 >= 622126 && p6 <= 622925)) return len >= 16 && len <= 19; // Discover
  if ((p3 >= 300 && p3 <= 305) || p4 === 3095 || p2 === 36 || p2 === 38 || p2 === 39) return len >= 14 && len <= 19; // Diners
  if (p4 >= 3528 && p4 <= 3589) return len >= 16 && len <= 19; // JCB
  if (p2 === 62) return len >= 16 && len <= 19; // UnionPay
  if (p4 >= 2200 && p4 <= 2204) return len >= 16 && len <= 19; // Mir
  if ([5018, 5020, 5038, 5893, 6304, 6759, 6761, 6762, 6763].includes(p4)) return len >= 13 && len <= 19; // Maestro
  return false;
}

const NUM_NEGATIVE_CTX_RE =
  /(?<![a-z])(?:order|orders|invoice|tracking|shipment|parcel|ref|reference|txn|transaction|trace|request|isbn|ean|upc|gtin|imei|iccid|serial|sku|part|phone|tel|fax|mobile|cell|id|uid|pid|no|num|number|nr|build|version|ticket|case|account|acct|routing|policy|claim|member|customer|booking|confirmation|receipt|record|row|seq|sequence|offset|nonce|snowflake|timestamp|ts|epoch|size|bytes|count|total|call|dial|ring|whatsapp|sms|ext|extension)[\s:#=."'_-]*(?:no\.?|number|num|nr|id|#)?[\s:#=."'_-]*$/i;
const CARD_POSITIVE_CTX_RE = /card|visa|master|amex|american express|discover|diners|jcb|maestro|unionpay|credit|debit|\bcc\b|\bpan\b|payment|\bpay\b|billing/i;

const CARD_RE = /(?<![\w.,+/#-]|\d[ -])\d(?:[ -]?\d){11,18}(?![\w]|[.,]\d|[ -]\d)/dg;
function checkCard(v: string, text: string, start: number): boolean {
  const hasSpace = v.includes(' ');
  const hasDash = v.includes('-');
  if (hasSpace && hasDash) return false;
  if (hasSpace || hasDash) {
    const groups = v.split(/[ -]/);
    if (groups.length < 3 || groups.length > 5) return false;
    if (groups.some((g) => g.length < 3 || g.length > 6)) return false;
  }
  const d = v.replace(/[ -]/g, '');
  if (d.length < 13 || d.length > 19) return false;
  if (!cardBrandOk(d)) return false;
  if (!luhnValid(d)) return false;
  if (TEST_CARDS.has(d)) return false;
  if (/^(\d)\1+$/.test(d.slice(1)) || sequentialRatio(d) > 0.7 || /(\d)\1{6,}/.test(d)) return false;
  const { before } = lineAround(text, start, start, 60);
  const ctx = before.slice(-48);
  if (CARD_POSITIVE_CTX_RE.test(ctx)) return true;
  if (NUM_NEGATIVE_CTX_RE.test(ctx)) return false;
  return true;
}

const INVALID_SSNS = new Set(['078051120', '219099999', '123456789', '987654320', '987654321']);
function ssnValid(area: string, group: string, serial: string): boolean {
  if (area === '000' || area === '666' || area[0] === '9') return false;
  if (group === '00' || serial === '0000') return false;
  if (INVALID_SSNS.has(area + group + serial)) return false;
  if (/^(\d)\1\1$/.test(area) && /^(\d)\1$/.test(group) && /^(\d)\1{3}$/.test(serial)) return false; // 111-22-3333 style
  return true;
}
const SSN_CTX_RE = /\b(?:ssn|ss#|ssan|social[ -]security(?:[ -](?:number|no\.?|#))?|soc\.? ?sec\.?|tin|taxpayer id)\b/i;
const SSN_DASH_RE = /(?<![\w-]|\d[ -])(\d{3})([- ])(\d{2})\2(\d{4})(?![\w-]|[ -]\d)/dg;
function checkSsn(_v: string, text: string, start: number, _end: number, m: RegExpExecArray): boolean {
  if (!ssnValid(m[1]!, m[3]!, m[4]!)) return false;
  const { before } = lineAround(text, start, start, 80);
  if (SSN_CTX_RE.test(before)) return true;
  if (m[2] === ' ') return false; // spaced form only with context
  if (NUM_NEGATIVE_CTX_RE.test(before.slice(-40))) return false;
  return true;
}
const SSN_BARE_RE = /\b(?:ssn|ss#|ssan|social[ -]security(?:[ -](?:number|no\.?|#))?|soc\.? ?sec\.?)\b[\s:#=."'-]{0,6}(?:is[ \t]+)?(\d{9})(?!\d)/dgi;

const PHONE_RE = /(?<![\w+/.:@=#-]|\d[ .-])(\+?\(?\d[\d ().-]{6,20}\d)(?![\w/@]|[.,:-]\d)/dg;
function checkPhone(v: string, text: string, start: number): boolean {
  const digits = v.replace(/\D/g, '');
  if (/\d{4}[-./]\d{1,2}[-./]\d{1,2}/.test(v) || /^\d{1,2}[-./]\d{1,2}[-./]\d{2,4}$/.test(v)) return false; // dates
  if (/^\d{1,3}(?:\.\d{1,3}){3}$/.test(v)) return false; // IPv4
  if (/\s{2,}/.test(v) || /[.-]{2,}/.test(v)) return false;
  if ((v.match(/\(/g) ?? []).length !== (v.match(/\)/g) ?? []).length) return false;
  if (/^(\d)\1+$/.test(digits)) return false;
  const { before } = lineAround(text, start, start, 40);
  if (/(?:order|invoice|tracking|ref|isbn|serial|version|v|id|#)[\s:#=."'_-]*$/i.test(before)) return false;
  if (v.startsWith('+')) {
    if (digits.length < 8 || digits.length > 15) return false;
    return /^\+\d{1,3}[ .-]?(?:\(?\d{1,4}\)?[ .-]?){1,5}\d{2,4}$/.test(v);
  }
  // NANP: (415) 555-0132, 415-555-0132, 415.555.0132, 1-415-555-0132
  if (/^(?:1[ .-])?(?:\(\d{3}\)[ ]?|\d{3}[ .-])\d{3}[ .-]\d{4}$/.test(v)) {
    const nanp = digits.length === 11 ? digits.slice(1) : digits;
    return nanp.length === 10 && /^[2-9]\d{2}[2-9]/.test(nanp);
  }
  // National numbers with trunk prefix 0: 020 7946 0958, 030 12345678, 06-12345678
  if (/^\(?0\d{1,4}\)?[ .-]\d{2,4}(?:[ .-]?\d{2,4}){1,3}$/.test(v)) return digits.length >= 9 && digits.length <= 12;
  return false;
}

/** E-mail addresses, found from each "@" outwards (fast on long inputs). */
const EMAIL_DOMAIN_RE = /(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![A-Za-z0-9-]|\.[A-Za-z0-9])/y;
const LOCAL_CHAR = /[A-Za-z0-9._%+-]/;
function scanEmail(text: string, emit: Emit): void {
  let at = text.indexOf('@');
  while (at >= 0) {
    let s = at;
    while (s > 0 && at - s < 64 && LOCAL_CHAR.test(text[s - 1]!)) s--;
    while (s < at && !/[A-Za-z0-9]/.test(text[s]!)) s++;
    if (s < at && !LOCAL_CHAR.test(text[s - 1] ?? ' ')) {
      EMAIL_DOMAIN_RE.lastIndex = at + 1;
      const m = EMAIL_DOMAIN_RE.exec(text);
      if (m && checkEmail(text.slice(s, at + 1 + m[0].length))) emit('email', s, at + 1 + m[0].length);
    }
    at = text.indexOf('@', at + 1);
  }
}
const FILE_TLDS = new Set([
  'png',
  'jpg',
  'jpeg',
  'gif',
  'svg',
  'webp',
  'ico',
  'js',
  'mjs',
  'cjs',
  'ts',
  'tsx',
  'jsx',
  'css',
  'scss',
  'html',
  'json',
  'map',
  'md',
  'txt',
  'pdf',
  'zip',
  'gz',
  'tgz',
  'wasm',
  'woff',
  'woff2',
  'ttf',
  'py',
  'rb',
  'go',
  'rs',
  'java',
  'lock',
  'yaml',
  'yml',
  'toml',
  'xml',
]);
function checkEmail(v: string): boolean {
  const at = v.lastIndexOf('@');
  const domain = v.slice(at + 1).toLowerCase();
  const tld = domain.slice(domain.lastIndexOf('.') + 1);
  if (FILE_TLDS.has(tld)) return false;
  if (/(?:^|\.)(?:example\.(?:com|org|net)|example|test|invalid|localhost|local)$/.test(domain)) return false;
  return true;
}

// ---------------------------------------------------------------------------
// Rule table

const R = String.raw`(?![A-Za-z0-9_\-])`; // right boundary
const rx = (src: string, flags = 'dg') => new RegExp(src, flags);

/**
 * Left token boundary, checked in code rather than with a leading lookbehind so that V8 can
 * search for the literal prefix. A JSON escape ("\n", "\t") right before the token counts as a boundary.
 */
function leftBoundary(text: string, start: number): boolean {
  if (start === 0) return true;
  const c = text.charCodeAt(start - 1);
  const word = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 45;
  if (!word) return true;
  return start >= 2 && text[start - 2] === '\\' && (c === 110 || c === 114 || c === 116);
}

/** Vendor token rule: prefix regex; the random tail (after `prefixLen`) is checked for placeholders. */
function vendor(
  kind: string,
  src: string,
  prefixes: string[],
  prefixLen: number,
  extra?: (v: string, text: string, start: number, end: number) => boolean | string,
  priority = P_VENDOR,
): Rule {
  return {
    kind,
    cls: 'secret',
    priority,
    prefixes,
    re: rx('(?:' + src + ')' + R, 'dy'),
    check: (v, text, start, end) => {
      if (!leftBoundary(text, start)) return false;
      if (KNOWN_EXAMPLES.has(v)) return false;
      if (isVendorPlaceholder(prefixLen >= 0 ? v.slice(prefixLen) : v.slice(prefixLen))) return false;
      return extra ? extra(v, text, start, end) : true;
    },
  };
}

const mixed = (v: string) => {
  const c = charClasses(v);
  return c.count >= 2 && shannonEntropy(v) >= 3;
};

const GOOGLE_AI_CTX_RE = /gemini|generativelanguage|genai|google[_ -]?ai|aistudio|ai studio|makersuite|palm|vertex/i;

function discordOk(v: string): boolean {
  const first = v.split('.')[0]!;
  try {
    const id = Buffer.from(first, 'base64').toString('latin1');
    return /^\d{17,20}$/.test(id);
  } catch {
    return false;
  }
}

function jwtOk(v: string): boolean {
  const [h, p, s = ''] = v.split('.');
  const header = b64urlJson(h!) as Record<string, unknown> | undefined;
  if (!header || typeof header !== 'object' || Array.isArray(header)) return false;
  if (!('alg' in header) && !('typ' in header) && !('kid' in header) && !('enc' in header)) return false;
  const payload = b64urlJson(p!) as Record<string, unknown> | undefined;
  if (!payload || typeof payload !== 'object') return false;
  if (header.alg !== 'none' && s.length < 16) return false;
  if (payload.sub === '1234567890' && payload.name === 'John Doe') return false; // the jwt.io sample
  return true;
}

function connPasswordOk(v: string, _text: string, _start: number, _end: number, m: RegExpExecArray): boolean {
  let pw = v;
  try {
    pw = decodeURIComponent(v);
  } catch {
    /* keep raw */
  }
  const user = m[2] ?? '';
  if (pw.length < 3) return false;
  if (/^\d{1,5}$/.test(pw)) return false; // host:port@… tricks, not a password
  if (isPlaceholder(pw)) return false;
  if (pw === user) return false;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(pw)) return false;
  return true;
}

export const RULES: readonly Rule[] = [
  // --- cloud -------------------------------------------------------------
  vendor(
    'aws_access_key',
    String.raw`(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}`,
    ['AKIA', 'ASIA', 'AGPA', 'AIDA', 'AROA', 'AIPA', 'ANPA', 'ANVA', 'ABIA', 'ACCA', 'A3T'],
    4,
    (v) => /\d/.test(v.slice(4)) || /[A-Z]{16}/.test(v.slice(4)),
  ),
  {
    kind: 'aws_secret_key',
    cls: 'secret',
    priority: P_CONTEXT,
    needles: ['secret', 'aws'],
    re: /(?:aws_?secret_?(?:access_?)?key|secret_?access_?key|SecretAccessKey|secretAccessKey|aws_secret|AWS_SECRET|AwsSecret)\\?["']?[ \t]*(?::=|=>|=|:|,)[ \t]*\\?["']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])/dgi,
    group: 1,
    check: (v) => !isVendorPlaceholder(v) && mixed(v) && /[A-Z]/.test(v) && /[a-z]/.test(v),
  },
  {
    // terraform / SDK style "secret_key = …" next to an AWS mention
    kind: 'aws_secret_key',
    cls: 'secret',
    priority: P_CONTEXT,
    needles: ['aws', 'amazon', 'boto', 's3'],
    re: /(?<![A-Za-z0-9_])(?:secret_?key|secret|SecretKey|secretKey)\\?["']?[ \t]*(?::=|=>|=|:)[ \t]*\\?["']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])/dg,
    group: 1,
    check: (v, text, start, end) => {
      if (isVendorPlaceholder(v) || !/[A-Z]/.test(v) || !/[a-z]/.test(v) || !/\d/.test(v)) return false;
      const { before, after } = lineAround(text, start, end, 200);
      return /aws|amazon|boto|\bs3\b/i.test(before + after);
    },
  },
  {
    // CSV / whitespace-separated pair: AKIA… then the 40-char secret close after it
    kind: 'aws_secret_key',
    cls: 'secret',
    priority: P_CONTEXT,
    needles: ['akia', 'asia'],
    re: /(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z2-7]{16}(?![A-Z0-9])[ \t,;:|"'=]{1,12}(?:[A-Za-z_]{1,30}[ \t]*[=:][ \t]*["']?)?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])/dg,
    group: 1,
    check: (v) => !isVendorPlaceholder(v) && /[A-Z]/.test(v) && /[a-z]/.test(v) && /\d/.test(v),
  },
  {
    kind: 'gcp_service_account',
    cls: 'secret',
    priority: P_WRAPPER,
    needles: ['service_account', 'gserviceaccount'],
    re: /\\?"private_key\\?"\s*:\s*\\?"(-----BEGIN [A-Z ]*PRIVATE KEY-----[^"]{40,12000}?-----END [A-Z ]*PRIVATE KEY-----(?:\\+n)?)/dg,
    group: 1,
  },
  vendor('gcp_api_key', String.raw`AIza[0-9A-Za-z_\-]{35}`, ['AIza'], 4, (_v, text, start, end) => {
    const { before, after } = lineAround(text, start, end, 160);
    return GOOGLE_AI_CTX_RE.test(before.slice(-160) + ' ' + after.slice(0, 80)) ? 'google_ai_key' : true;
  }),
  {
    kind: 'azure_storage_key',
    cls: 'secret',
    priority: P_CONTEXT,
    needles: ['accountkey', 'account-key', 'azure', 'storage'],
    re: /(?:AccountKey=|--account-key[ =]|(?:azure|storage)[\w.-]{0,30}?(?:key|secret)\\?["']?[ \t]*(?::=|=>|=|:)[ \t]*\\?["']?)([A-Za-z0-9+/]{86}==)/dgi,
    group: 1,
    check: (v) => !isVendorPlaceholder(v.slice(0, 86)),
  },
  // --- code hosting / CI ------------------------------------------------
  vendor(
    'github_token',
    String.raw`(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}`,
    ['ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_', 'github_pat_'],
    4,
  ),
  vendor(
    'gitlab_token',
    String.raw`gl(?:pat|dt|rt|ptt|cbt|soat|ft|imt|agent|oas|wt|ffct)-[A-Za-z0-9_\-.]{20,80}|GR1348941[A-Za-z0-9_\-]{20}`,
    ['glpat-', 'gldt-', 'glrt-', 'glptt-', 'glcbt-', 'glsoat-', 'glft-', 'glimt-', 'glagent-', 'gloas-', 'glwt-', 'glffct-', 'GR1348941'],
    6,
    (v) => mixed(v.slice(v.indexOf('-') + 1)),
  ),
  vendor('bitbucket_app_password', String.raw`ATBB[A-Za-z0-9_=.\-]{32}`, ['ATBB'], 4, (v) => mixed(v.slice(4))),
  vendor('atlassian_token', String.raw`ATATT3[A-Za-z0-9_=\-]{150,300}`, ['ATATT3'], 6),
  vendor('npm_token', String.raw`npm_[A-Za-z0-9]{36}`, ['npm_'], 4, (v) => mixed(v.slice(4))),
  {
    kind: 'npm_token',
    cls: 'secret',
    priority: P_CONTEXT,
    needles: ['_authtoken'],
    re: /_authToken[ \t]*=[ \t]*["']?([A-Za-z0-9_\-]{20,})/dg,
    group: 1,
    check: (v) => !isVendorPlaceholder(v) && !isPlaceholder(v),
  },
  vendor('pypi_token', String.raw`pypi-AgE[A-Za-z0-9_\-]{50,}`, ['pypi-AgE'], 8),
  // --- chat ---------------------------------------------------------------
  vendor(
    'slack_token',
    String.raw`(?:xox[abposr]|xoxe(?:\.xox[bp])?)-[0-9A-Za-z\-]{10,250}|xapp-\d-[A-Z0-9]{6,}-\d{6,}-[A-Za-z0-9]{20,}`,
    ['xoxb-', 'xoxp-', 'xoxa-', 'xoxo-', 'xoxs-', 'xoxr-', 'xoxe-', 'xoxe.', 'xapp-'],
    5,
    (v) => {
      const parts = v.split('-');
      const last = parts[parts.length - 1]!;
      return parts.length >= 3 && last.length >= 8 && /\d/.test(v.slice(5)) && !isPlaceholder(last);
    },
  ),
  vendor(
    'slack_webhook',
    String.raw`https://hooks\.slack\.com/(?:services|workflows|triggers)/T[A-Z0-9]{6,12}/[AB][A-Z0-9]{6,12}/[A-Za-z0-9/]{20,}`,
    ['https://hooks.slack.com/'],
    30,
  ),
  vendor('discord_token', String.raw`[MNO][A-Za-z0-9_\-]{22,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}`, ['M', 'N', 'O'], 0, (v) => discordOk(v)),
  vendor(
    'discord_webhook',
    String.raw`https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/webhooks/\d{17,20}/[A-Za-z0-9_\-]{60,70}`,
    ['https://discord', 'https://ptb.discord', 'https://canary.discord'],
    40,
  ),
  {
    kind: 'telegram_bot_token',
    cls: 'secret',
    priority: P_VENDOR,
    needles: [':'],
    re: /\d{8,10}:[A-Za-z0-9_\-]{35}(?![A-Za-z0-9_\-])/dg,
    check: (v, text, start) => {
      if (KNOWN_EXAMPLES.has(v)) return false;
      if (/\d/.test(text[start - 1] ?? '')) return false;
      if (!leftBoundary(text, start) && !/bot$/i.test(text.slice(Math.max(0, start - 3), start))) return false;
      if (text[start - 1] === ':') return false;
      const s = v.slice(v.indexOf(':') + 1);
      return !isVendorPlaceholder(s) && /[A-Z]/.test(s) && /[a-z]/.test(s) && shannonEntropy(s) >= 3.5;
    },
  },
  // --- payments / comms -------------------------------------------------------
  vendor('twilio_key', String.raw`(?:SK|AC)[0-9a-f]{32}`, ['SK', 'AC'], 2, (v) => /[a-f]/.test(v.slice(2)) && /\d/.test(v.slice(2))),
  {
    kind: 'twilio_key',
    cls: 'secret',
    priority: P_CONTEXT,
    needles: ['twilio', 'ac'],
    re: /(?:twilio[\w.-]{0,30}?(?:auth[_-]?token|token|secret)\\?["']?[ \t]*(?::=|=>|=|:)[ \t]*\\?["']?|AC[0-9a-f]{32}:)([0-9a-f]{32})(?![0-9A-Za-z])/dgi,
    group: 1,
    check: (v) => !isVendorPlaceholder(v) && shannonEntropy(v) >= 3,
  },
  vendor(
    'stripe_key',
    String.raw`(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{20,247}|whsec_[A-Za-z0-9]{32,}`,
    ['sk_live_', 'sk_test_', 'rk_live_', 'rk_test_', 'whsec_'],
    8,
    (v) => mixed(v.slice(8)),
  ),
  vendor('paypal_braintree', String.raw`access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32}`, ['access_token$'], -32),
  vendor('square_token', String.raw`EAAA[A-Za-z0-9_\-]{60}|sq0(?:atp|csp|idp)-[0-9A-Za-z_\-]{22,43}`, ['EAAA', 'sq0atp-', 'sq0csp-', 'sq0idp-'], 4, (v) =>
    mixed(v.slice(7)),
  ),
  vendor('sendgrid_key', String.raw`SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}`, ['SG.'], 3),
  vendor('mailgun_key', String.raw`key-[0-9a-f]{32}`, ['key-'], 4, (v) => shannonEntropy(v.slice(4)) >= 3),
  { kind: 'mailgun_key', cls: 'secret', priority: P_VENDOR_LOOSE, needles: ['-'], scan: scanMailgunNew },
  vendor('shopify_token', String.raw`shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}`, ['shpat_', 'shpca_', 'shppa_', 'shpss_'], 6),
  vendor('facebook_token', String.raw`EAA[BCDG][A-Za-z0-9]{90,}`, ['EAAB', 'EAAC', 'EAAD', 'EAAG'], 4),
  vendor('mapbox_token', String.raw`sk\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{20,}`, ['sk.eyJ'], 3),
  // --- AI providers --------------------------------------------------------
  vendor('openai_key', String.raw`sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{40,250}|sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}`, ['sk-'], 3, (v) =>
    mixed(v),
  ),
  vendor('anthropic_key', String.raw`sk-ant-(?:api|admin|oat|sid)\d{2}-[A-Za-z0-9_\-]{80,120}`, ['sk-ant-'], 14),
  vendor('openrouter_key', String.raw`sk-or-v1-[a-f0-9]{64}`, ['sk-or-v1-'], 9),
  vendor(
    'openai_key',
    String.raw`sk-[A-Za-z0-9_\-]{20,200}`,
    ['sk-'],
    3,
    (v) => {
      const t = v.slice(3);
      if (/^(?:ant|or|proj|svcacct|admin)-/.test(t)) return false;
      if (isPlaceholder(t)) return false;
      const c = charClasses(t);
      return c.digit && (c.lower || c.upper) && shannonEntropy(t) >= 3.6 && !/^[a-z]+(?:-[a-z]+)+(?:-\d+)?$/.test(t);
    },
    P_VENDOR_LOOSE,
  ),
  vendor('huggingface_token', String.raw`(?:hf_|api_org_)[A-Za-z0-9]{34}`, ['hf_', 'api_org_'], 3, (v) => /[A-Z]/.test(v) && /[a-z]/.test(v.slice(3))),
  vendor('groq_key', String.raw`gsk_[A-Za-z0-9]{52}`, ['gsk_'], 4, (v) => mixed(v.slice(4))),
  vendor('replicate_token', String.raw`r8_[A-Za-z0-9]{37}`, ['r8_'], 3, (v) => mixed(v.slice(3))),
  vendor('xai_key', String.raw`xai-[A-Za-z0-9]{70,90}`, ['xai-'], 4, (v) => mixed(v.slice(4))),
  vendor('perplexity_key', String.raw`pplx-[A-Za-z0-9]{40,60}`, ['pplx-'], 5, (v) => mixed(v.slice(5))),
  // --- infra ------------------------------------------------------------
  vendor('digitalocean_token', String.raw`do[opr]_v1_[a-f0-9]{64}`, ['dop_v1_', 'doo_v1_', 'dor_v1_'], 7),
  vendor('vault_token', String.raw`hv[sbr]\.[A-Za-z0-9_\-]{24,}`, ['hvs.', 'hvb.', 'hvr.'], 4, (v) => mixed(v.slice(4))),
  vendor('databricks_token', String.raw`dapi[a-f0-9]{32}(?:-\d)?`, ['dapi'], 4),
  vendor('doppler_token', String.raw`dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}`, ['dp.'], 6),
  vendor('postman_key', String.raw`PMAK-[a-f0-9]{24}-[a-f0-9]{34}`, ['PMAK-'], 5),
  vendor('linear_key', String.raw`lin_(?:api|oauth)_[A-Za-z0-9]{40}`, ['lin_api_', 'lin_oauth_'], 8),
  vendor('newrelic_key', String.raw`NRAK-[A-Z0-9]{27}`, ['NRAK-'], 5),
  vendor('grafana_token', String.raw`glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_eyJ[A-Za-z0-9+/=_\-]{60,}`, ['glsa_', 'glc_'], 4),
  vendor('pulumi_token', String.raw`pul-[a-f0-9]{40}`, ['pul-'], 4),
  vendor('notion_token', String.raw`(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{46})`, ['secret_', 'ntn_'], 4, (v) => mixed(v.slice(4))),
  vendor('google_oauth_token', String.raw`ya29\.[0-9A-Za-z_\-]{20,2048}`, ['ya29.'], 5, (v) => mixed(v.slice(5))),
  vendor('sentry_token', String.raw`sntry[su]_[A-Za-z0-9+/=_\-]{40,400}`, ['sntrys_', 'sntryu_'], 7),
  vendor('firebase_fcm_key', String.raw`AAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{100,200}`, ['AAAA'], 18),
  vendor('heroku_key', String.raw`HRKU-[A-Za-z0-9_\-]{20,80}`, ['HRKU-'], 5, (v) => mixed(v.slice(5))),
  vendor('supabase_key', String.raw`sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{20,80}`, ['sbp_', 'sb_secret_'], 4),
  vendor('langsmith_key', String.raw`lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}`, ['lsv2_pt_', 'lsv2_sk_'], 8),
  vendor('tavily_key', String.raw`tvly-(?:dev-|prod-)?[A-Za-z0-9]{20,40}`, ['tvly-'], 5, (v) => mixed(v.slice(5))),
  { kind: 'azure_client_secret', cls: 'secret', priority: P_VENDOR, needles: ['q~'], scan: scanAzureClientSecret },
  { kind: 'terraform_token', cls: 'secret', priority: P_VENDOR, needles: ['.atlasv1.'], scan: scanTerraformToken },
  {
    kind: 'private_key',
    cls: 'secret',
    priority: P_VENDOR,
    prefixes: ['AGE-SECRET-KEY-1'],
    re: /AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}(?![A-Z0-9])/dy,
  },
  // --- structural -----------------------------------------------------------
  { kind: 'private_key', cls: 'secret', priority: P_PEM, needles: ['private key'], scan: scanPem },
  {
    kind: 'jwt',
    cls: 'secret',
    priority: P_JWT,
    prefixes: ['eyJ'],
    re: /eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*(?![A-Za-z0-9_\-])/dy,
    check: (v, text, start) => leftBoundary(text, start) && text[start - 1] !== '.' && jwtOk(v),
  },
  {
    kind: 'connection_string',
    cls: 'secret',
    priority: P_CONN,
    needles: ['://'],
    re: /(?<![A-Za-z0-9+.\-])([a-z][a-z0-9+.\-]{1,30}):\/\/([^\s:/@"'<>`\\]{0,128}):([^\s/"'<>`\\]{1,256})@(?=[A-Za-z0-9[_%])/dgi,
    group: 3,
    check: connPasswordOk,
  },
  { kind: 'generic_secret', cls: 'secret', priority: P_GENERIC, scan: scanKeyValues },
  { kind: 'generic_secret', cls: 'secret', priority: P_GENERIC, needles: ['name', 'key'], scan: scanNameValue },
  { kind: 'generic_secret', cls: 'secret', priority: P_GENERIC - 1, needles: ['pass', 'pwd', 'key', 'secret', 'token', 'pin'], scan: scanProse },
  { kind: 'generic_secret', cls: 'secret', priority: P_GENERIC, needles: ['-u', '--', '-p', 'sshpass', 'machine'], scan: scanCli },
  { kind: 'generic_secret', cls: 'secret', priority: P_GENERIC, needles: ['password', 'identified', 'define(', '</', 'auth'], scan: scanCodeForms },
  // --- PII -------------------------------------------------------------------
  { kind: 'card_number', cls: 'pii', priority: P_PII, re: CARD_RE, check: (v, text, start) => checkCard(v, text, start) },
  { kind: 'iban', cls: 'pii', priority: P_PII, scan: scanIban },
  { kind: 'ssn', cls: 'pii', priority: P_PII, needles: ['-', ' '], re: SSN_DASH_RE, check: checkSsn },
  {
    kind: 'ssn',
    cls: 'pii',
    priority: P_PII,
    needles: ['ssn', 'ss#', 'ssan', 'social', 'soc'],
    re: SSN_BARE_RE,
    group: 1,
    check: (v) => ssnValid(v.slice(0, 3), v.slice(3, 5), v.slice(5)),
  },
  // --- contact ----------------------------------------------------------------
  { kind: 'phone', cls: 'contact', priority: P_CONTACT, re: PHONE_RE, group: 1, check: (v, text, start) => checkPhone(v, text, start) },
  { kind: 'email', cls: 'contact', priority: P_CONTACT, needles: ['@'], scan: scanEmail },
];
