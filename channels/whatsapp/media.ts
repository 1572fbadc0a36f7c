import type { Logger } from 'pino';
import type { Attachment } from '../../kernel/envelope.js';
import { type FormParams, param } from '../twilio/signature.js';
import type { WhatsAppConfig } from './config.js';

/** Twilio sends at most 10 media per message. */
const MAX_MEDIA = 10;

/**
 * The media of an inbound message (NumMedia, MediaUrlN, MediaContentTypeN). An image is fetched
 * (HTTP basic auth with the account SID and auth token, as Twilio's media URLs need; only a URL
 * under the API's /2010-04-01/Accounts/<this account>/Messages/), and kept with
 * its bytes when they are a PNG, JPEG, GIF or WebP of at most maxMediaBytes (checked by the bytes,
 * not the label): the model sees it. Anything else stays a named attachment and a text note.
 */
export async function inboundMedia(p: FormParams, cfg: WhatsAppConfig, log: Logger): Promise<{ attachments: Attachment[]; notes: string[] }> {
  const n = Math.min(Number(param(p, 'NumMedia') ?? 0) || 0, MAX_MEDIA);
  const attachments: Attachment[] = [];
  const notes: string[] = [];
  for (let i = 0; i < n; i++) {
    const url = param(p, `MediaUrl${i}`);
    const contentType = param(p, `MediaContentType${i}`);
    const named: Attachment = { name: `media-${i}`, ...(contentType ? { contentType } : {}), ...(url ? { url } : {}) };
    if (!url || !contentType?.startsWith('image/') || !cfg.fetchMedia) {
      attachments.push(named);
      notes.push(`[the person sent a ${contentType ?? 'file'} attachment that cannot be shown here]`);
      continue;
    }
    const image = await fetchImage(url, i, cfg).catch((err: unknown) => {
      log.warn({ err: String(err), index: i }, 'whatsapp: could not fetch an image');
      return null;
    });
    if (image) attachments.push(image);
    else {
      attachments.push(named);
      notes.push('[the person sent an image that could not be read]');
    }
  }
  return { attachments, notes };
}

async function fetchImage(url: string, index: number, cfg: WhatsAppConfig): Promise<Attachment | null> {
  // Only Twilio's own media URLs of this account get the credentials (not any address a payload names).
  const base = cfg.apiBaseUrl ?? 'https://api.twilio.com';
  if (!url.startsWith(`${base}/2010-04-01/Accounts/${cfg.accountSid}/Messages/`)) throw new Error("media URL is not this account's Twilio media");
  const auth = `Basic ${Buffer.from(`${cfg.accountSid}:${cfg.authToken}`).toString('base64')}`;
  const r = await fetch(url, { headers: { authorization: auth }, signal: AbortSignal.timeout(cfg.requestTimeoutMs) });
  if (!r.ok || !r.body) throw new Error(`media fetch answered ${r.status}`);
  const declared = Number(r.headers.get('content-length') ?? 0);
  if (declared > cfg.maxMediaBytes) {
    await r.body.cancel();
    return null;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of r.body as AsyncIterable<Uint8Array>) {
    size += c.length;
    if (size > cfg.maxMediaBytes) return null;
    chunks.push(Buffer.from(c));
  }
  const bytes = Buffer.concat(chunks);
  const type = sniffImageType(bytes);
  if (!type) return null;
  return { name: `image-${index + 1}.${type.slice('image/'.length)}`, contentType: type, size: bytes.length, data: bytes.toString('base64') };
}

/** What the bytes say they are, by their first bytes (never by the label): as channels/http/images.ts checks. */
function sniffImageType(b: Buffer): string | undefined {
  if (b.length >= 8 && b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (b.length >= 6 && /^GIF8[79]a$/.test(b.subarray(0, 6).toString('latin1'))) return 'image/gif';
  if (b.length >= 12 && b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  return undefined;
}
