import type { Api } from 'grammy';
import type { Message } from 'grammy/types';
import type { Attachment } from '../../kernel/envelope.js';
import { DEFAULT_MAX_IMAGE_BYTES, declaredTooLarge, fetchImageAttachment, looksLikeImage, notShownAttachment } from '../../src/channel/index.js';

/** Whether a message carries something to show the model (a photo, an image document): it is taken even without a caption. */
export function hasImage(m: Message): boolean {
  return !!m.photo?.length || looksLikeImage(m.document?.mime_type);
}

/**
 * A message's image for the model: the largest photo size within maxBytes (Telegram sends several),
 * or an image/* document; getFile, then the Bot API's file endpoint (<apiRoot>/file/bot<token>/<path>,
 * the configured API host: fetched directly). The URL holds the token: it is never kept.
 * A non-image document stays named.
 */
export async function telegramAttachments(m: Message, api: Api, opts: { token: string; apiRoot: string; maxBytes?: number }): Promise<Attachment[]> {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_IMAGE_BYTES;
  const take = async (fileId: string, name: string, declaredType: string | undefined, declaredSize: number | undefined): Promise<Attachment> => {
    const src = { name, ...(declaredType ? { declaredType } : {}), ...(declaredSize !== undefined ? { declaredSize } : {}) };
    const over = declaredTooLarge(src, maxBytes);
    if (over) return over;
    let path: string | undefined;
    try {
      path = (await api.getFile(fileId)).file_path;
    } catch (err) {
      return notShownAttachment(src, `image not shown: getFile failed (${(err as Error).message.slice(0, 120)})`);
    }
    if (!path) return notShownAttachment(src, 'image not shown: Telegram gave no file path (files over 20 MB are not downloadable by bots)');
    return fetchImageAttachment({ ...src, url: `${opts.apiRoot}/file/bot${opts.token}/${path}`, maxBytes, fixedHost: true });
  };
  if (m.photo?.length) {
    const sizes = [...m.photo].sort((a, b) => (b.file_size ?? b.width * b.height) - (a.file_size ?? a.width * a.height));
    const fits = sizes.find((s) => s.file_size === undefined || s.file_size <= maxBytes) ?? sizes[0]!;
    return [await take(fits.file_id, 'photo.jpg', 'image/jpeg', fits.file_size)];
  }
  const d = m.document;
  if (!d) return [];
  const name = d.file_name ?? 'file';
  if (!looksLikeImage(d.mime_type))
    return [{ name, ...(d.mime_type ? { contentType: d.mime_type } : {}), ...(d.file_size !== undefined ? { size: d.file_size } : {}) }];
  return [await take(d.file_id, name, d.mime_type, d.file_size)];
}
