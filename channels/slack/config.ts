import { z } from 'zod';
import { ConfigError, configError, issueProblems } from '../../src/channel/config.js';
import { catchUpSchema, groupsSchema } from '../../src/channel/sections.js';

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name');

/** channels.slack: validated here, secrets read from the environment variables it names. */
export const slackSchema = z
  .object({
    /** socket: Socket Mode (an outbound websocket, no public URL); http: the Events API on the gateway's HTTP server. */
    mode: z.enum(['socket', 'http']).default('socket'),
    botTokenEnv: envName.default('SLACK_BOT_TOKEN'),
    /** Socket Mode only (xapp-…). */
    appTokenEnv: envName.default('SLACK_APP_TOKEN'),
    /** HTTP mode only. */
    signingSecretEnv: envName.default('SLACK_SIGNING_SECRET'),
    /** Web API base URL (tests and proxies). */
    apiUrl: z.url().default('https://slack.com/api/'),
    /** HTTP mode: the route on the gateway's HTTP server for events and interactivity. */
    eventsPath: z
      .string()
      .regex(/^\/[A-Za-z0-9/_.-]*$/, 'expected a path such as /slack/events')
      .default('/slack/events'),
    /** native: chat.startStream/appendStream/stopStream in threads; edit: chat.postMessage + chat.update only. */
    streaming: z.enum(['native', 'edit']).default('native'),
    /** Least time between two chat.update calls of one turn (Slack accepts about one per second). */
    updateIntervalMs: z.number().int().min(100).default(1_000),
    /** Least time between two chat.appendStream calls. */
    streamIntervalMs: z.number().int().min(50).default(500),
    /** chat.appendStream calls a minute for all native streams of one workspace (Slack's per-workspace limit), per worker process. */
    appendStreamPerMinute: z.number().int().min(6).default(100),
    /** Longer replies are split into several messages. */
    maxMessageChars: z.number().int().min(200).max(12_000).default(3_500),
    /** Socket Mode: no event and no ping from Slack for this long → the connection is deaf: reconnect. */
    silenceMs: z.number().int().min(500).default(60_000),
    /** Slack wants an answer within 3 s; an event still being written after this is acknowledged anyway. */
    ackTimeoutMs: z.number().int().min(100).max(2_900).default(2_500),
    /** How long a resolved display name (users.info) is kept. */
    nameCacheMs: z.number().int().nonnegative().default(3_600_000),
    /** Per Web API call. */
    requestTimeoutMs: z.number().int().positive().default(10_000),
    /** How long a turn's own delivery keeps retrying a failing Slack before a delivery job takes over (0: at once). */
    deliveryTimeoutMs: z.number().int().nonnegative().default(30_000),
    /** Manners in channels (who is answered, other bots, ambient replies): by default mentions and threads the bot is in. */
    groups: groupsSchema({ respondIn: 'threads' }),
    /** Messages sent while the gateway was down: read with conversations.history / .replies after the last one seen. */
    catchUp: catchUpSchema,
  })
  .strict();

export type SlackSettings = z.infer<typeof slackSchema>;

export interface SlackConfig extends SlackSettings {
  botToken: string;
  /** Present in Socket Mode (checked when the listener starts: workers do not need it). */
  appToken?: string;
  /** Present in HTTP mode (same). */
  signingSecret?: string;
}

export function parseSlackConfig(raw: unknown, env: Record<string, string | undefined>): SlackConfig {
  const r = slackSchema.safeParse(raw ?? {});
  if (!r.success) {
    throw configError(issueProblems(r.error.issues, slackSchema, ['channels', 'slack'], raw ?? {}));
  }
  const s = r.data;
  const botToken = env[s.botTokenEnv]?.trim();
  if (!botToken)
    throw new ConfigError(
      `invalid configuration at "channels.slack.botTokenEnv" (${s.botTokenEnv}): the environment variable holding the bot token (xoxb-…) is not set`,
    );
  const appToken = env[s.appTokenEnv]?.trim() || undefined;
  const signingSecret = env[s.signingSecretEnv]?.trim() || undefined;
  return { ...s, botToken, ...(appToken ? { appToken } : {}), ...(signingSecret ? { signingSecret } : {}) };
}

/** The listener's own secret: the app token (socket) or the signing secret (http). */
export function requireListenSecret(c: SlackConfig): string {
  if (c.mode === 'socket') {
    if (!c.appToken)
      throw new ConfigError(
        `invalid configuration at "channels.slack.appTokenEnv" (${c.appTokenEnv}): Socket Mode needs the app-level token (xapp-…) in this environment variable`,
      );
    return c.appToken;
  }
  if (!c.signingSecret)
    throw new ConfigError(
      `invalid configuration at "channels.slack.signingSecretEnv" (${c.signingSecretEnv}): the HTTP Events API needs the signing secret in this environment variable`,
    );
  return c.signingSecret;
}
