import http from 'node:http';

export interface OperatorStats {
  answered: number;
  /** Answers whose connection the operator dropped right after sending (the decision may or may not have committed). */
  dropped: number;
  /** Status of the answer that followed each dropped one, by status code. */
  retryStatuses: Record<string, number>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** POSTs the decision and destroys the socket as soon as the request is written: the answer is never read. */
function answerAndDrop(url: string, key: string, code: string): Promise<void> {
  return new Promise((resolve) => {
    const body = JSON.stringify({ decision: 'approve' });
    const req = http.request(`${url}/v1/approvals/${code}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('error', () => resolve());
    req.end(body, () => {
      // Give the gateway a moment to commit (or not), then cut the connection before the answer.
      setTimeout(() => {
        req.destroy();
        resolve();
      }, Math.random() * 20);
    });
  });
}

/**
 * An operator who approves every pending request through the HTTP API, across the ingresses; a share
 * of the answers lose their connection right after sending, and are answered again, as an operator
 * who saw an error would.
 */
export function runOperator(o: { urls: string[]; key: string; dropShare: number; stop: () => boolean }): { done: Promise<void>; stats: OperatorStats } {
  const stats: OperatorStats = { answered: 0, dropped: 0, retryStatuses: {} };
  const seen = new Set<string>();
  const done = (async () => {
    for (let round = 0; !o.stop(); round++) {
      const url = o.urls[round % o.urls.length]!;
      try {
        const r = await fetch(`${url}/v1/approvals`, { headers: { authorization: `Bearer ${o.key}` }, signal: AbortSignal.timeout(10_000) });
        if (!r.ok) {
          await sleep(500);
          continue;
        }
        const list = (await r.json()) as { data?: Array<{ code: string }> } | Array<{ code: string }>;
        const pending = Array.isArray(list) ? list : (list.data ?? []);
        for (const a of pending) {
          const firstTime = !seen.has(a.code);
          seen.add(a.code);
          if (firstTime && Math.random() < o.dropShare) {
            await answerAndDrop(url, o.key, a.code);
            stats.dropped++;
            await sleep(200);
            const again = await fetch(`${o.urls[(round + 1) % o.urls.length]!}/v1/approvals/${a.code}`, {
              method: 'POST',
              headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/json' },
              body: JSON.stringify({ decision: 'approve' }),
              signal: AbortSignal.timeout(10_000),
            }).catch(() => undefined);
            const k = again ? String(again.status) : 'network error';
            stats.retryStatuses[k] = (stats.retryStatuses[k] ?? 0) + 1;
            await again?.body?.cancel();
            stats.answered++;
            continue;
          }
          const res = await fetch(`${url}/v1/approvals/${a.code}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ decision: 'approve' }),
            signal: AbortSignal.timeout(10_000),
          }).catch(() => undefined);
          await res?.body?.cancel();
          if (res?.ok) stats.answered++;
        }
      } catch {
        /* an ingress restarting: the next round asks another */
      }
      await sleep(300);
    }
  })();
  return { done, stats };
}
