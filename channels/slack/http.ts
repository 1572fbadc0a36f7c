import type { Logger } from 'pino';
import { BodyTooLargeError, parseJsonObject, type RouteContext as RequestContext, sendJson } from '../../src/channel/index.js';
import type { RelayReceiver } from './receiver.js';
import { verifySlackSignature } from './signature.js';

export interface SlackHttpDeps {
  signingSecret: string;
  relay: RelayReceiver;
  ackTimeoutMs: number;
  log: Logger;
}

/**
 * POST <eventsPath> on the gateway's own HTTP server: the Events API and
 * interactivity. The signature is checked over the raw body within Slack's
 * five-minute window (401 otherwise). An event is answered 200 once it is in
 * the inbox, or after ackTimeoutMs at the latest (Slack wants an answer within
 * 3 s); 500 when it could not be written, so that Slack retries it. Retries
 * (X-Slack-Retry-Num) go through the same path: the ingress replays their
 * first outcome (src/ingress/steps/redelivery.ts), so they are no-ops.
 */
export async function handleSlackHttp(rc: RequestContext, deps: SlackHttpDeps): Promise<void> {
  const { req, res } = rc;
  let raw: Buffer;
  try {
    raw = await rc.body();
  } catch (err) {
    if (err instanceof BodyTooLargeError) return sendJson(res, 413, { ok: false, error: 'request_too_large' });
    throw err;
  }
  const check = verifySlackSignature(deps.signingSecret, raw, req.headers);
  if (!check.ok) {
    deps.log.warn({ reason: check.reason }, 'refused a Slack request with a bad signature');
    return sendJson(res, 401, { ok: false, error: 'invalid_signature' });
  }
  let body: Record<string, unknown>;
  try {
    body = parseBody(raw.toString('utf8'), String(req.headers['content-type'] ?? ''));
  } catch {
    return sendJson(res, 400, { ok: false, error: 'invalid_body' });
  }
  if (body.type === 'url_verification') return sendJson(res, 200, { challenge: body.challenge });
  if (body.ssl_check) return sendJson(res, 200, { ok: true });
  // Not connected to Slack yet (auth.test pending): Slack retries later.
  if (!deps.relay.ready) return sendJson(res, 503, { ok: false, error: 'not_ready' });
  const retryNum = Number(req.headers['x-slack-retry-num']);
  const retry = Number.isInteger(retryNum) ? retryNum : undefined;
  const retryReason = typeof req.headers['x-slack-retry-reason'] === 'string' ? req.headers['x-slack-retry-reason'] : undefined;

  if (body.type === 'event_callback') {
    // A signed callback without an event cannot be stored; a 500 would only make Slack send it again.
    const ev = body.event as { type?: unknown } | null | undefined;
    if (!ev || typeof ev !== 'object' || Array.isArray(ev) || typeof ev.type !== 'string') return sendJson(res, 400, { ok: false, error: 'invalid_event' });
    const handled = deps.relay.event(body, retry, retryReason);
    const r = await Promise.race([handled, sleep(deps.ackTimeoutMs).then(() => 'late' as const)]);
    if (r === false) return sendJson(res, 500, { ok: false, error: 'not_stored' });
    res.writeHead(200).end();
    return;
  }

  let answered = false;
  const answer = (response?: unknown) => {
    if (answered || res.headersSent) return;
    answered = true;
    if (response === undefined || response === '') res.writeHead(200).end();
    else if (typeof response === 'string') res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(response);
    else sendJson(res, 200, response);
  };
  const work = deps.relay
    .interactive(body, async (response?: unknown) => answer(response), retry, retryReason)
    .catch((err: unknown) => deps.log.error({ err }, 'slack interactivity failed'));
  await Promise.race([work, sleep(deps.ackTimeoutMs)]);
  answer();
}

function parseBody(text: string, contentType: string): Record<string, unknown> {
  if (contentType.includes('application/x-www-form-urlencoded')) {
    const form = new URLSearchParams(text);
    const payload = form.get('payload');
    if (payload !== null) return parseJsonObject(payload); // an object: a payload of null is a 400, not a crash below
    return Object.fromEntries(form);
  }
  return parseJsonObject(text);
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());
