import { WebClient, type WebClientOptions } from '@slack/web-api';
import type { Logger } from 'pino';
import type { SlackConfig } from './config.js';
import { boltLogger } from './logger.js';

/** Web API options shared by bolt's client and the deliverer's: our URL, short retries, a per-call timeout. */
export function webClientOptions(c: SlackConfig, log: Logger): WebClientOptions {
  return {
    slackApiUrl: c.apiUrl.endsWith('/') ? c.apiUrl : `${c.apiUrl}/`,
    logger: boltLogger(log),
    timeout: c.requestTimeoutMs,
    // Network errors and 5xx: a few quick retries; 429: the SDK waits for Retry-After.
    retryConfig: { retries: 3, factor: 2, minTimeout: 250, maxTimeout: 4_000, randomize: true },
  };
}

export function webClient(c: SlackConfig, log: Logger): WebClient {
  return new WebClient(c.botToken, webClientOptions(c, log));
}

/** The Slack error code of a failed call (`channel_not_found`, `ratelimited`…), or the error's message. */
export function slackError(err: unknown): string {
  const e = err as { data?: { error?: string }; code?: string; message?: string };
  return e?.data?.error ?? e?.code ?? e?.message ?? String(err);
}

/** A failure worth retrying the whole turn for (Slack unreachable), as opposed to a refusal that would repeat. */
export function isTransient(err: unknown): boolean {
  const e = err as { code?: string; data?: { error?: string } };
  if (e?.code === 'slack_webapi_request_error' || e?.code === 'slack_webapi_http_error' || e?.code === 'slack_webapi_rate_limited_error') return true;
  return ['ratelimited', 'internal_error', 'fatal_error', 'service_unavailable', 'request_timeout'].includes(e?.data?.error ?? '');
}
