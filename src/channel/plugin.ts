import type { ChannelDeliverer } from './deliver.js';
import type { ChannelListener } from './listen.js';

/**
 * A chat platform, in two halves. `listen` runs in the ingress: it receives
 * platform events (a long-lived connection or webhook routes on the gateway's
 * HTTP server), verifies them, normalizes them into InboundMessages for
 * ctx.ingress.accept(), and routes approval answers (buttons, "YES K7Q4P") to
 * ctx.approvals.answer(). `deliver` runs where the turn runs: it turns the
 * agent's event stream into what the platform can show. Platform code stays in
 * channels/<name>/; nothing else imports its SDK.
 */
export interface ChannelPlugin {
  readonly name: string;
  /** Validates this channel's configuration section (channels.<name>); throw ConfigError naming the key. */
  configure(raw: unknown, env: Record<string, string | undefined>): ChannelInstance;
}

export interface ChannelInstance {
  readonly name: string;
  /** Ingress side; absent for deliver-only channels. */
  listener?: ChannelListener;
  /** Worker side. */
  deliverer?: ChannelDeliverer;
}
