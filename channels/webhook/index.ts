import { type ChannelPlugin, ConfigError, configError, issueProblems } from '../../src/channel/index.js';
import { type WebhookChannelConfig, webhookChannelSchema } from './config.js';
import { WebhookDeliverer } from './deliver.js';
import { WebhookListener } from './listen.js';
import { parseWebhookReplyTo, type WebhookReplyTo } from './reply-to.js';

/** channels.webhook with each hook's secret read from the environment. */
export interface WebhookSettings {
  cfg: WebhookChannelConfig;
  secrets: Map<string, string>;
}

function parseWebhookConfig(raw: unknown, env: Record<string, string | undefined>): WebhookSettings {
  const parsed = webhookChannelSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    throw configError(issueProblems(parsed.error.issues, webhookChannelSchema, ['channels', 'webhook'], raw ?? {}));
  }
  const cfg = parsed.data;
  const secrets = new Map<string, string>();
  cfg.hooks.forEach((h, i) => {
    const s = env[h.secretEnv];
    if (!s || s.length < 16)
      throw new ConfigError(
        `invalid configuration at "channels.webhook.hooks.${i}.secretEnv": environment variable ${h.secretEnv} must hold a secret of at least 16 characters`,
      );
    secrets.set(h.name, s);
  });
  return { cfg, secrets };
}

/** The generic webhook channel: signed JSON in at /v1/webhooks/{name}, signed replies out to a callback. */
export const plugin: ChannelPlugin<WebhookSettings, WebhookReplyTo | null> = {
  name: 'webhook',
  parseConfig: parseWebhookConfig,
  parseReplyTo: parseWebhookReplyTo,
  listener: ({ cfg, secrets }) => new WebhookListener(cfg, secrets),
  deliverer: ({ cfg, secrets }) => new WebhookDeliverer(cfg, secrets),
};
