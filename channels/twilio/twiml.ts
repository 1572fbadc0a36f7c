import type { ServerResponse } from 'node:http';
import twilio from 'twilio';

const EMPTY = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';

/** TwiML for a webhook answer: empty (nothing to say now; the agent answers later over the REST API) or one reply message. */
export function twiml(reply?: string | null): string {
  if (!reply) return EMPTY;
  const r = new twilio.twiml.MessagingResponse();
  r.message(reply);
  return r.toString();
}

export function sendTwiml(res: ServerResponse, reply?: string | null): void {
  const body = twiml(reply);
  res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

export function sendPlain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
