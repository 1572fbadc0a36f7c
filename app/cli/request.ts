import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

/**
 * One HTTP request of a CLI verb to the running gateway, over node:http: the verbs make a handful of
 * small requests, and fetch (undici, loaded on first use) cost more CPU to start than the rest of such a
 * verb. No connection is kept open. A failure to connect rejects with Node's own error
 * (`code` ECONNREFUSED...); no answer within `timeoutMs` rejects with a TimeoutError.
 */
export interface CliResponse {
  status: number;
  ok: boolean;
  text(): Promise<string>;
  json(): Promise<unknown>;
}

export function cliRequest(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number } = {},
): Promise<CliResponse> {
  const target = new URL(url);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(target, { method: init.method ?? 'GET', headers: init.headers ?? {}, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      const body = new Promise<string>((done, fail) => {
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => done(Buffer.concat(chunks).toString('utf8')));
        res.on('error', fail);
      });
      const status = res.statusCode ?? 0;
      resolve({ status, ok: status >= 200 && status < 300, text: () => body, json: async () => JSON.parse(await body) });
    });
    if (init.timeoutMs !== undefined) {
      // The whole exchange, as AbortSignal.timeout did for fetch (not the socket's idle time).
      const timer = setTimeout(() => req.destroy(Object.assign(new Error('no answer in time'), { name: 'TimeoutError' })), init.timeoutMs).unref();
      req.on('close', () => clearTimeout(timer));
    }
    req.on('error', reject);
    req.end(init.body);
  });
}
