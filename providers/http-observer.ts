import { randomUUID } from 'node:crypto';
import { type HttpObservation, parseRetryAfter } from './errors.js';
import { canUseModelFetch, modelFetch } from './model-fetch.js';

/**
 * pi-ai reports a failed call only as an error message: no status field, no
 * headers. The SDKs it drives all call globalThis.fetch, so a thin wrapper
 * records the status and Retry-After of the responses made for one model call.
 * The call is recognized by a marker header (given to pi-ai as an extra header
 * and removed before the request leaves), not by AsyncLocalStorage, whose
 * promise hooks would tax every promise in the process. Marked calls also take
 * the lean node:http transport (model-fetch.ts).
 */
export const CALL_HEADER = 'x-switchboard-call';
const pending = new Map<string, HttpObservation>();
let installed = false;

function install(): void {
  if (installed) return;
  installed = true;
  const original = globalThis.fetch;
  const wrapped: typeof fetch = async (input, init) => {
    let obs: HttpObservation | undefined;
    if (init?.headers) {
      const headers = new Headers(init.headers);
      const id = headers.get(CALL_HEADER);
      if (id) {
        obs = pending.get(id);
        headers.delete(CALL_HEADER);
        init = { ...init, headers };
      }
    }
    const res = obs && canUseModelFetch(input, init) ? await modelFetch(input as string | URL, init) : await original(input, init);
    if (obs) {
      obs.status = res.status;
      const ms = res.headers.get('retry-after-ms');
      obs.retryAfterMs = ms && /^\d+$/.test(ms) ? Number(ms) : parseRetryAfter(res.headers.get('retry-after'));
    }
    return res;
  };
  globalThis.fetch = wrapped;
}

/**
 * Runs fn with a fresh observation: fn must pass `headers` to the model call.
 * The observation is filled in as the call's responses arrive; release() forgets it.
 */
export function observeHttp<T>(fn: (headers: Record<string, string>) => T): { result: T; observation: HttpObservation; release: () => void } {
  install();
  const id = randomUUID();
  const observation: HttpObservation = {};
  pending.set(id, observation);
  return { result: fn({ [CALL_HEADER]: id }), observation, release: () => void pending.delete(id) };
}

/**
 * For a transport that makes its own request (the lean one): the headers
 * without the marker, and the observation the marker names, to fill in itself.
 */
export function claimObservation(headers: Record<string, string | undefined>): { headers: Record<string, string>; observation?: HttpObservation } {
  const out: Record<string, string> = {};
  let observation: HttpObservation | undefined;
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    if (k.toLowerCase() === CALL_HEADER) observation = pending.get(v);
    else out[k] = v;
  }
  return observation ? { headers: out, observation } : { headers: out };
}
