import { AsyncLocalStorage } from 'node:async_hooks';
import { parseRetryAfter, type HttpObservation } from './errors.js';

/**
 * pi-ai reports a failed call only as an error message: no status field, no
 * headers. The SDKs it drives all call globalThis.fetch, so a thin wrapper,
 * active only inside observeHttp(), records the status and Retry-After of the
 * responses made for one model call. Outside observeHttp() it passes through.
 */
const als = new AsyncLocalStorage<HttpObservation>();
let installed = false;

function install(): void {
  if (installed) return;
  installed = true;
  const original = globalThis.fetch;
  const wrapped: typeof fetch = async (input, init) => {
    const obs = als.getStore();
    const res = await original(input, init);
    if (obs) {
      obs.status = res.status;
      const ms = res.headers.get('retry-after-ms');
      obs.retryAfterMs = ms && /^\d+$/.test(ms) ? Number(ms) : parseRetryAfter(res.headers.get('retry-after'));
    }
    return res;
  };
  globalThis.fetch = wrapped;
}

/** Runs fn with a fresh observation that the fetches it starts fill in. */
export function observeHttp<T>(fn: () => T): { result: T; observation: HttpObservation } {
  install();
  const observation: HttpObservation = {};
  return { result: als.run(observation, fn), observation };
}
