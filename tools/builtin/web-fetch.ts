import { convert } from 'html-to-text';
import { z } from 'zod';
import { SsrfBlockedError, safeFetch } from '../../moat/ssrf.js';
import { defineTool, ToolError } from '../contract.js';

const TEXT_TYPES = /^(text\/|application\/(json|xml|xhtml\+xml|ld\+json|rss\+xml|atom\+xml|javascript))/i;

/** Fetches a public web page through the SSRF guard and returns it as readable text. */
export function webFetchTool(opts: { allowHosts?: string[]; allowCidrs?: string[]; maxBytes?: number } = {}) {
  return defineTool({
    name: 'web_fetch',
    description: 'Fetch a public web page or API (http/https) and return its readable text. Private and internal addresses are refused.',
    effect: 'read',
    idempotent: true,
    toolset: 'web',
    timeoutMs: 30_000,
    schema: z.object({ url: z.string().url().describe('http(s) URL') }),
    async execute({ url }, ctx) {
      let res;
      try {
        res = await safeFetch(url, {
          maxBytes: opts.maxBytes ?? 2 * 1024 * 1024,
          timeoutMs: 20_000,
          signal: ctx.signal,
          headers: { 'user-agent': 'Switchboard/0.1 (+web_fetch)', accept: 'text/html,application/xhtml+xml,application/json,text/plain;q=0.9,*/*;q=0.5' },
          ...(opts.allowHosts ? { allowHosts: opts.allowHosts } : {}),
          ...(opts.allowCidrs ? { allowCidrs: opts.allowCidrs } : {}),
        });
      } catch (err) {
        if (err instanceof SsrfBlockedError) throw new ToolError(`refused by the SSRF guard: ${err.check.reason}`);
        throw new ToolError(`fetch failed: ${(err as Error).message}`);
      }
      const type = res.headers['content-type'] ?? '';
      if (type && !TEXT_TYPES.test(type)) throw new ToolError(`not a text document (${type}); only text, HTML, JSON and XML are read`);
      const raw = res.body.toString('utf8');
      const text =
        /html/i.test(type) || /^\s*<(!doctype html|html)/i.test(raw)
          ? convert(raw, {
              wordwrap: false,
              selectors: [
                { selector: 'img', format: 'skip' },
                { selector: 'nav', format: 'skip' },
                { selector: 'footer', format: 'skip' },
                { selector: 'a', options: { ignoreHref: false, hideLinkHrefIfSameAsText: true } },
              ],
            })
          : raw;
      return {
        text: `${res.status} ${res.url}${res.truncated ? ' (truncated)' : ''}\n\n${text.trim()}`,
        details: { status: res.status, url: res.url, redirects: res.redirects },
      };
    },
  });
}
