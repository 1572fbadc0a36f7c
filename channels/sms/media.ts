import type { Attachment } from '../../kernel/envelope.js';
import { DEFAULT_MAX_IMAGE_BYTES, fetchImageAttachment, looksLikeImage } from '../../src/channel/index.js';

/**
 * An MMS's images (MediaUrl<N>, MediaContentType<N>) downloaded for the model. A media URL on
 * Twilio's API host (or the configured apiBaseUrl's origin, a test's fake) is fetched with the
 * account's Basic credentials, as Twilio requires when HTTP Basic auth for media is on (its answer
 * redirects to the file; the credentials are not sent to another origin). Any other address goes
 * through the SSRF guard without them. Other media stay named.
 */
export function smsMedia(opts: {
  accountSid: string;
  authToken: string;
  apiBaseUrl?: string | undefined;
}): (atts: Attachment[], maxBytes?: number) => Promise<Attachment[]> {
  const apiOrigin = new URL(opts.apiBaseUrl ?? 'https://api.twilio.com').origin;
  const basic = `Basic ${Buffer.from(`${opts.accountSid}:${opts.authToken}`).toString('base64')}`;
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
        const own = url.origin === apiOrigin || (url.protocol === 'https:' && url.hostname === 'api.twilio.com');
        const got = await fetchImageAttachment({
          name: a.name,
          ...(a.contentType ? { declaredType: a.contentType } : {}),
          url: url.href,
          maxBytes,
          fixedHost: own,
          // Twilio waits 15 s for the webhook's answer: the download must fit well within it.
          timeoutMs: 8_000,
          ...(own ? { headers: { authorization: basic } } : {}),
        });
        return { ...got, url: a.url };
      }),
    );
}
