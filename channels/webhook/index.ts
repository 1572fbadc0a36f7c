import type { ChannelPlugin } from '../../src/channel/index.js';
import { ConfigError, configError, issueProblems } from '../../src/config.js';
import { webhookChannelSchema } from './config.js';
import { WebhookDeliverer } from './deliver.js';
import { WebhookListener } from './listen.js';

/** The generic webhook channel: signed JSON in at /v1/webhooks/{name}, signed replies out to a callback. */
export const plugin: ChannelPlugin = {
  name: 'webhook',
  configure(raw, env) {
    const parsed = webhookChannelSchema.safeParse(raw ?? {});
    if (!parsed.success) {
      throw configError(issueProblems(parsed.error.issues, webhookChannelSchema, ['channels', 'webhook'], raw ?? {}));
    }
    const cfg = parsed.data;
    const secrets = new Map<string, string>();
    cfg.hooks.forEach((h, i) => {
      const s = env[h.secretEnv];
      if (!s || s.length < 16) throw new ConfigError(`invalid configuration at "channels.webhook.hooks.${i}.secretEnv": environment variable ${h.secretEnv} must hold a secret of at least 16 characters`);
      secrets.set(h.name, s);
    });
    return { name: 'webhook', listener: new WebhookListener(cfg, secrets), deliverer: new WebhookDeliverer(cfg, secrets) };
  },
};
