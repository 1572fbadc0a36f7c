import type { Attachment } from '../../kernel/envelope.js';
import { DEFAULT_MAX_IMAGE_BYTES, fetchImageAttachment, looksLikeImage } from '../../src/channel/index.js';

/** Discord's own attachment hosts (signed CDN URLs: the ex/is/hm query is the auth). */
const CDN_HOSTS = new Set(['cdn.discordapp.com', 'media.discordapp.net']);

/**
 * A message's image attachments downloaded for the model from their CDN URL (signed: kept as
 * given). Discord's CDN and the configured API's own origin (a test's fake) are fetched directly;
 * any other address goes through the SSRF guard. Other files stay named.
 */
export function discordFiles(apiBaseUrl: string): (atts: Attachment[], maxBytes?: number) => Promise<Attachment[]> {
  const apiOrigin = new URL(apiBaseUrl).origin;
  return (atts, maxBytes = DEFAULT_MAX_IMAGE_BYTES) =>
    Promise.all(
      atts.map(async (a) => {
        if (!a.url || !looksLikeImage(a.contentType)) return a;
        let url: URL;
        try {
          url = new URL(a.url);
        } catch {
          return { ...a, note: 'image not shown: its address is not a URL' };
        }
        const got = await fetchImageAttachment({
          name: a.name,
          ...(a.contentType ? { declaredType: a.contentType } : {}),
          ...(a.size !== undefined ? { declaredSize: a.size } : {}),
          url: url.href,
          maxBytes,
          fixedHost: (url.protocol === 'https:' && CDN_HOSTS.has(url.hostname)) || url.origin === apiOrigin,
        });
        return { ...got, url: a.url };
      }),
    );
}
