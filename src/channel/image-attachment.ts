import type { Attachment } from '../../kernel/envelope.js';
import { ignoreError } from '../../kernel/errors.js';
import { safeFetch } from '../../moat/ssrf.js';
import { sniffImageType } from './image-type.js';

/**
 * Fetch and check one image attachment of a chat message: its bytes downloaded (at most maxBytes),
 * its type read from its magic bytes (PNG, JPEG, GIF, WebP; never the sender's label), and kept as
 * the attachment's data, which the turn shows the model as image content (a model without image
 * input gets pi-ai's note instead). What cannot be shown stays named, with a note saying why.
 * Never throws: a failed download is a note too.
 */

/** attachments.maxImageBytes when a context does not say. */
export const DEFAULT_MAX_IMAGE_BYTES = 5 * 1024 * 1024;

export interface ImageSource {
  /** The file's name as the sender gave it. */
  name: string;
  /** The type the platform declared (only a hint: the bytes decide). */
  declaredType?: string;
  /** The size the platform declared: larger than maxBytes is refused before any download. */
  declaredSize?: number;
}

export interface ImageFetch extends ImageSource {
  url: string;
  /** The platform's auth for the download (a bot token, Basic credentials). */
  headers?: Record<string, string>;
  maxBytes: number;
  /**
   * The URL is the platform's own fixed file host (or the configured API base): fetched directly.
   * Otherwise every hop goes through the SSRF guard (moat/ssrf.ts).
   */
  fixedHost?: boolean;
  timeoutMs?: number;
}

/** The attachment as the message keeps it: named, with why it is not shown. */
export function noted(src: ImageSource, note: string): Attachment {
  return {
    name: src.name,
    ...(src.declaredType ? { contentType: src.declaredType } : {}),
    ...(src.declaredSize !== undefined ? { size: src.declaredSize } : {}),
    note,
  };
}

/** Checks bytes already in hand (an email's MIME part): type by magic bytes, size by maxBytes. */
export function checkImageBytes(src: ImageSource, bytes: Buffer, maxBytes: number): Attachment {
  if (bytes.length > maxBytes) return noted(src, `image not shown: larger than the ${maxBytes}-byte limit`);
  const type = sniffImageType(bytes);
  if (!type) return noted(src, 'not shown: the file is not a PNG, JPEG, GIF or WebP image');
  return { name: src.name, contentType: type, size: bytes.length, data: bytes.toString('base64') };
}

/** Whether a platform-declared type asks for the image path (everything else stays a named file). */
export function looksLikeImage(declaredType: string | undefined): boolean {
  return !!declaredType && /^image\//i.test(declaredType.trim());
}

/** The note of an image whose declared size is over the limit (nothing downloaded), else undefined. */
export function declaredTooLarge(src: ImageSource, maxBytes: number): Attachment | undefined {
  return src.declaredSize !== undefined && src.declaredSize > maxBytes ? noted(src, `image not shown: larger than the ${maxBytes}-byte limit`) : undefined;
}

export async function fetchImageAttachment(f: ImageFetch): Promise<Attachment> {
  const over = declaredTooLarge(f, f.maxBytes);
  if (over) return over;
  try {
    const got = f.fixedHost ? await directFetch(f) : await guardedFetch(f);
    if ('note' in got) return noted(f, got.note);
    return checkImageBytes(f, got.body, f.maxBytes);
  } catch (err) {
    return noted(f, `image not shown: it could not be downloaded (${(err as Error).message.slice(0, 120)})`);
  }
}

type Got = { body: Buffer } | { note: string };

const tooLarge = (max: number): Got => ({ note: `image not shown: larger than the ${max}-byte limit` });

async function guardedFetch(f: ImageFetch): Promise<Got> {
  const r = await safeFetch(f.url, { ...(f.headers ? { headers: f.headers } : {}), maxBytes: f.maxBytes + 1, timeoutMs: f.timeoutMs ?? 15_000 });
  if (r.status < 200 || r.status >= 300) return { note: `image not shown: the download answered ${r.status}` };
  if (r.truncated || r.body.length > f.maxBytes) return tooLarge(f.maxBytes);
  return { body: r.body };
}

async function directFetch(f: ImageFetch): Promise<Got> {
  const r = await fetch(f.url, { ...(f.headers ? { headers: f.headers } : {}), signal: AbortSignal.timeout(f.timeoutMs ?? 15_000) });
  if (!r.ok || !r.body) {
    await r.body?.cancel();
    return { note: `image not shown: the download answered ${r.status}` };
  }
  const length = Number(r.headers.get('content-length') ?? Number.NaN);
  if (length > f.maxBytes) {
    await r.body.cancel();
    return tooLarge(f.maxBytes);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of r.body) {
    size += chunk.length;
    if (size > f.maxBytes) {
      await r.body.cancel().catch(ignoreError('the download is over the limit either way; a failed cancel only leaves the socket to the timeout'));
      return tooLarge(f.maxBytes);
    }
    chunks.push(Buffer.from(chunk));
  }
  return { body: Buffer.concat(chunks) };
}
