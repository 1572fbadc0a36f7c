import type { Logger } from 'pino';
import type { Attachment } from '../../kernel/envelope.js';
import { fetchImageAttachment } from '../../src/channel/index.js';
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
  const image = await fetchImageAttachment({
    name: `image-${index + 1}`,
    url,
    headers: { authorization: auth },
    maxBytes: cfg.maxMediaBytes,
    fixedHost: true,
    timeoutMs: cfg.requestTimeoutMs,
  });
  return image.data ? image : null;
}
