import { randomBytes } from 'node:crypto';
import { stringify } from 'yaml';
import type { ChannelSetup } from '../../src/channel/index.js';
import { InitError } from './answers.js';

export const PROVIDERS = ['openai', 'anthropic', 'openai-compatible', 'none'] as const;
export type ProviderChoice = (typeof PROVIDERS)[number];
export const ACCESS_POLICIES = ['pairing', 'allowlist', 'open'] as const;

export interface ProviderAnswers {
  provider: ProviderChoice;
  model?: string;
  baseUrl?: string;
  /** The key itself; unset: the variable is left for the operator to fill (or taken from their environment). */
  key?: string;
}

export interface ChannelAnswers {
  name: string;
  setup: ChannelSetup;
  answers: Record<string, string>;
  /** The operator's own id on this platform, when given: allowed and an operator. */
  operator?: string;
}

export interface InitPlan {
  configYaml: string;
  envText: string;
  /** What .env sets (secrets included): init probes with it, --json reports the names only. */
  env: Record<string, string>;
  /** Variables written empty, for the operator to fill, with what goes there. */
  toFill: Array<{ name: string; hint: string }>;
  apiKey: string;
  operatorKey: string;
  guides: Array<{ channel: string; text: string }>;
}

/** A generated bearer key: 24 random bytes, URL-safe (the HTTP API wants at least 8 characters). */
export function generateKey(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString('base64url')}`;
}

/** The environment variables of the chosen provider (the README's precedence: base URL, Anthropic, OpenAI). */
export function providerEnv(p: ProviderAnswers, processEnv: Record<string, string | undefined>): { env: Record<string, string>; toFill: InitPlan['toFill'] } {
  const env: Record<string, string> = {};
  const toFill: InitPlan['toFill'] = [];
  const keyVar = p.provider === 'anthropic' ? 'ANTHROPIC_API_KEY' : 'OPENAI_API_KEY';
  if (p.provider === 'none') return { env, toFill };
  if (p.provider === 'openai-compatible' && p.baseUrl) env.OPENAI_BASE_URL = p.baseUrl;
  if (p.model) env.SWITCHBOARD_MODEL = p.model;
  if (p.key) env[keyVar] = p.key;
  else if (!processEnv[keyVar] && p.provider !== 'openai-compatible') toFill.push({ name: keyVar, hint: `the ${p.provider} API key` });
  return { env, toFill };
}

/** The configuration file and .env for the answers. Pure: writing and probing are the verb's. */
export function planInit(a: {
  provider: ProviderAnswers;
  access: string;
  channels: ChannelAnswers[];
  processEnv: Record<string, string | undefined>;
  now?: Date;
}): InitPlan {
  const apiKey = generateKey('sb');
  const operatorKey = generateKey('sbop');
  const config: Record<string, unknown> = {};
  const channels: Record<string, unknown> = {};
  const access: Record<string, unknown> = {};
  const operators: Record<string, string[]> = {};
  const toFill: InitPlan['toFill'] = [];
  for (const c of a.channels) {
    channels[c.name] = c.setup.config(c.answers);
    access[c.name] = { policy: a.access, ...(c.operator ? { allow: [c.operator] } : {}) };
    if (c.operator) operators[c.name] = [c.operator];
    // Two channels may read one secret (SMS and WhatsApp: TWILIO_AUTH_TOKEN): written once.
    for (const s of c.setup.secrets(c.answers)) if (!a.processEnv[s.name] && !toFill.some((f) => f.name === s.name)) toFill.push(s);
  }
  if (a.channels.length) {
    config.channels = channels;
    config.access = access;
  }
  if (Object.keys(operators).length) config.approvals = { operators };

  const provider = providerEnv(a.provider, a.processEnv);
  toFill.unshift(...provider.toFill);
  const env: Record<string, string> = {
    SWITCHBOARD_CONFIG: 'switchboard.yaml',
    SWITCHBOARD_API_KEYS: apiKey,
    SWITCHBOARD_API_KEY: apiKey,
    SWITCHBOARD_OPERATOR_KEYS: operatorKey,
    ...provider.env,
  };
  const when = (a.now ?? new Date()).toISOString();
  const header = [
    `# Written by \`switchboard init\` on ${when}. Every key is in the README ("Configuration").`,
    '# The default access policy of a chat channel (allowlist, empty) refuses every sender it does not know:',
    `# this file sets ${a.access} for the channels chosen.`,
  ];
  const configYaml = `${header.join('\n')}\n${Object.keys(config).length ? stringify(config) : '{}\n'}`;
  const envLines = [
    `# Written by \`switchboard init\` on ${when}; loaded by every switchboard command run in this folder`,
    '# (a variable already in the environment wins). Keep it secret: it holds the keys.',
    `SWITCHBOARD_CONFIG=${env.SWITCHBOARD_CONFIG}`,
    '# The user key of the HTTP API (Authorization: Bearer …); `switchboard chat` presents SWITCHBOARD_API_KEY.',
    `SWITCHBOARD_API_KEYS=${apiKey}`,
    `SWITCHBOARD_API_KEY=${apiKey}`,
    '# The operator key: approvals, access, the console, `switchboard status`.',
    `SWITCHBOARD_OPERATOR_KEYS=${operatorKey}`,
    ...Object.entries(provider.env).map(([k, v]) => `${k}=${quote(v)}`),
    ...toFill.flatMap((f) => [`# ${f.hint}`, `${f.name}=`]),
  ];
  return {
    configYaml,
    envText: `${envLines.join('\n')}\n`,
    env,
    toFill,
    apiKey,
    operatorKey,
    guides: a.channels.map((c) => ({ channel: c.name, text: c.setup.guide(c.answers) })),
  };
}

/** A value as Node's dotenv parser (util.parseEnv) reads it back unchanged: its quotes have no escapes. */
export function quote(v: string): string {
  // A line break would start a variable of its own in .env (an injected SWITCHBOARD_OPEN_ACCESS=true...).
  if (/[\r\n]/.test(v)) throw new InitError('a value for .env cannot hold a line break');
  if (/^[\w@%+=:,./-]*$/.test(v)) return v;
  for (const q of ["'", '"', '`']) if (!v.includes(q)) return `${q}${v}${q}`;
  throw new InitError('a value for .env cannot hold all three quote characters');
}
