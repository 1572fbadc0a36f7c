import type { Attachment as MimePart } from 'mailparser';
import type { Attachment } from '../../kernel/envelope.js';
import { checkImageBytes, DEFAULT_MAX_IMAGE_BYTES, looksLikeImage } from '../../src/channel/index.js';

/**
 * A mail's attachments as the message keeps them: each image/* MIME part, attached or inline
 * (a cid: picture in the HTML), checked by the shared helper (magic bytes, maxBytes) and kept
 * with its bytes for the model, or named with a note; any other attached file named. Inline
 * parts that are not images (signatures' vCards, calendar bits) are left out, as before.
 */
export function mailAttachments(parts: readonly MimePart[], maxBytes = DEFAULT_MAX_IMAGE_BYTES): Attachment[] {
  const out: Attachment[] = [];
  let inline = 0;
  for (const a of parts) {
    const image = looksLikeImage(a.contentType);
    if (a.contentDisposition === 'inline' && !a.filename && !image) continue;
    const name = a.filename ?? (image ? `inline-image-${++inline}` : 'attachment');
    if (!image) {
      out.push({ name, contentType: a.contentType, size: a.size });
      continue;
    }
    out.push(checkImageBytes({ name, declaredType: a.contentType, declaredSize: a.size }, a.content, maxBytes));
  }
  return out;
}
