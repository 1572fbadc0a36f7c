import type { Logger } from 'pino';
import { BodyTooLargeError, type RouteContext } from '../../src/channel/index.js';
import { type FormParams, param, parseForm, signedUrl, verifyTwilioRequest } from './signature.js';
import { sendPlain, sendTwiml } from './twiml.js';

/** What a Twilio webhook route checks a request against (SMS and WhatsApp share it). */
export interface TwilioWebhookKeys {
  accountSid: string;
  authToken: string;
  webhookSigningKey?: string;
  publicUrl: string;
}

/**
 * The body, signature and account checks every Twilio webhook gets before its handler runs, and the
 * TwiML (or empty) answer after; no exception escapes. `channel` names the log lines and the config
 * key the SharedKey error points at (channels.<channel>.webhookSigningKeyEnv).
 */
export async function guardTwilioWebhook(
  { req, res, url, body }: RouteContext,
  keys: TwilioWebhookKeys,
  channel: string,
  log: Logger,
  handle: (p: FormParams, url: URL) => Promise<string | null>,
): Promise<void> {
  try {
    let raw: Buffer;
    try {
      raw = await body();
    } catch (err) {
      if (err instanceof BodyTooLargeError) return sendPlain(res, 413, 'request too large');
      throw err;
    }
    const params = parseForm(raw);
    const full = signedUrl(keys.publicUrl, req.url ?? url.pathname);
    const check = verifyTwilioRequest(
      req,
      { authToken: keys.authToken, ...(keys.webhookSigningKey ? { signingKey: keys.webhookSigningKey } : {}) },
      full,
      params,
    );
    if (!check.ok) {
      if (check.reason === 'no_signing_key') {
        // Not a health flag: the header alone, unauthenticated, must not change the gateway's state.
        log.error(
          { path: url.pathname, algorithm: check.algorithm },
          `${channel}: refused a webhook signed with a Twilio SharedKey (X-Twilio-Webhooks-Signature-Settings): set channels.${channel}.webhookSigningKeyEnv to the variable holding its secret`,
        );
        return sendPlain(res, 403, 'signed with a SharedKey; no webhook signing key is configured');
      }
      log.warn(
        { path: url.pathname, reason: check.reason, algorithm: check.algorithm, sharedKey: Boolean(req.headers['x-twilio-webhooks-signature-settings']) },
        `${channel}: refused a webhook with a bad or missing X-Twilio-Signature`,
      );
      return sendPlain(res, 403, 'invalid signature');
    }
    if (param(params, 'AccountSid') !== keys.accountSid) {
      log.warn({ path: url.pathname }, `${channel}: refused a webhook for another account`);
      return sendPlain(res, 403, 'wrong account');
    }
    sendTwiml(res, await handle(params, url));
  } catch (err) {
    log.error({ err, path: url.pathname }, `${channel}: webhook failed`);
    if (!res.headersSent) sendPlain(res, 500, 'internal error');
    else res.end();
  }
}
