import type { Attachment } from '../../kernel/envelope.js';
import { RequestError, sniffImageType } from '../../src/channel/index.js';

export { sniffImageType };

/** The largest image a request may carry, decoded (the body limit, http.maxBodyBytes, applies first). */
export const MAX_IMAGE_BYTES = 4 * 1024 * 1024;
/** Images per request. */
export const MAX_IMAGES = 8;

const DATA_URL = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+)?((?:;[a-z0-9-]+=[^;,]*)*);base64,/i;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * An image part of a request (chat completions' `image_url.url`, responses' `image_url`) as an
 * attachment carrying its bytes: only a base64 data URL of a PNG, JPEG, GIF or WebP image of at most
 * 4 MB. A remote URL is refused rather than fetched: the gateway makes no request to an address a
 * client chose, and a slow or huge download would hold the turn.
 */
export function imageAttachment(url: unknown, param: string, index: number): Attachment {
  if (typeof url !== 'string' || !url) throw new RequestError(400, `${param} must be a string: a data URL of the image`, param, 'invalid_type');
  const head = DATA_URL.exec(url.slice(0, 200));
  if (!head) {
    if (/^https?:/i.test(url))
      throw new RequestError(
        400,
        `${param}: image URLs are not fetched by the gateway; send the image inline as a base64 data URL (data:image/png;base64,…)`,
        param,
        'unsupported_image_url',
      );
    throw new RequestError(400, `${param} must be a base64 data URL (data:image/png;base64,…)`, param, 'invalid_image');
  }
  const encoded = url.slice(head[0].length).replace(/\s+/g, '');
  if (encoded.length > Math.ceil((MAX_IMAGE_BYTES * 4) / 3) + 4)
    throw new RequestError(400, `${param}: the image is larger than ${MAX_IMAGE_BYTES} bytes`, param, 'image_too_large');
  if (!BASE64.test(encoded) || encoded.length % 4 === 1) throw new RequestError(400, `${param}: the data URL is not valid base64`, param, 'invalid_image');
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.length > MAX_IMAGE_BYTES) throw new RequestError(400, `${param}: the image is larger than ${MAX_IMAGE_BYTES} bytes`, param, 'image_too_large');
  const type = sniffImageType(bytes);
  if (!type) throw new RequestError(400, `${param}: the data is not a PNG, JPEG, GIF or WebP image`, param, 'invalid_image');
  return { name: `image-${index + 1}.${type.slice('image/'.length)}`, contentType: type, size: bytes.length, data: bytes.toString('base64') };
}

/** Refuses more images than one request may carry. */
export function checkImageCount(images: readonly Attachment[], param: string): void {
  if (images.length > MAX_IMAGES) throw new RequestError(400, `at most ${MAX_IMAGES} images per request`, param, 'too_many_images');
}
