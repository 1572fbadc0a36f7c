import type { Attachment } from '../../kernel/envelope.js';
import { DEFAULT_MAX_IMAGE_BYTES, fetchImageAttachment, looksLikeImage } from '../../src/channel/index.js';

/**
 * A message's image files, downloaded for the model: url_private with the bot token (Slack requires
 * it), only from Slack's file host or the configured API's own origin (a test's fake); an image at
 * any other address goes through the SSRF guard, without the token. Other files stay named.
 */
export function slackFiles(opts: { token: string; apiUrl: string }): (atts: Attachment[], maxBytes?: number) => Promise<Attachment[]> {
  const apiOrigin = new URL(opts.apiUrl).origin;
  const fixed = (url: URL) => (url.protocol === 'https:' && url.hostname === 'files.slack.com') || url.origin === apiOrigin;
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
        const own = fixed(url);
        return fetchImageAttachment({
          name: a.name,
          ...(a.contentType ? { declaredType: a.contentType } : {}),
          ...(a.size !== undefined ? { declaredSize: a.size } : {}),
          url: url.href,
          maxBytes,
          fixedHost: own,
          ...(own ? { headers: { authorization: `Bearer ${opts.token}` } } : {}),
        });
      }),
    );
}
