/**
 * Caps a tool result for the model without breaking evidence: JSON stays valid
 * JSON and loses whole rows from its largest arrays (never half a row), with a
 * count of what was left out; plain text is cut at a line boundary. Sizes are
 * in UTF-8 bytes. The caller stores the full result so the model can page it.
 */
export interface CappedResult {
  text: string;
  truncated: boolean;
  /** Rows left out, by JSON path of the array ("$" is the top level). */
  omitted: Record<string, number>;
  /** Bytes of the full result. */
  fullBytes: number;
}

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

export function capResult(text: string, maxBytes: number, pageHint?: string): CappedResult {
  const fullBytes = bytes(text);
  if (fullBytes <= maxBytes) return { text, truncated: false, omitted: {}, fullBytes };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (json !== undefined && typeof json === 'object' && json !== null) {
    const capped = capJson(json, maxBytes, pageHint);
    if (capped) return { ...capped, fullBytes };
  }
  return { ...capText(text, maxBytes, fullBytes, pageHint), omitted: {}, fullBytes };
}

function capText(text: string, maxBytes: number, fullBytes: number, pageHint?: string): { text: string; truncated: boolean } {
  const note = (kept: number) => `\n[… ${fullBytes - kept} more bytes not shown${pageHint ? `; ${pageHint}` : ''}]`;
  const budget = Math.max(0, maxBytes - bytes(note(0)) - 8);
  let cut = Buffer.from(text, 'utf8')
    .subarray(0, budget)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  const nl = cut.lastIndexOf('\n');
  if (nl > budget / 2) cut = cut.slice(0, nl);
  return { text: cut + note(bytes(cut)), truncated: true };
}

/** Repeatedly drops the last row of the largest array until the wrapper fits. */
function capJson(value: unknown, maxBytes: number, pageHint?: string): Omit<CappedResult, 'fullBytes'> | null {
  const data = structuredClone(value);
  const omitted: Record<string, number> = {};
  const wrap = () => JSON.stringify({ truncated: true, omittedRows: omitted, ...(pageHint ? { more: pageHint } : {}), result: data });
  for (let guard = 0; guard < 1_000_000; guard++) {
    const out = wrap();
    if (bytes(out) <= maxBytes) return { text: out, truncated: true, omitted };
    const biggest = largestArray(data, '$');
    if (!biggest || biggest.array.length === 0) return null; // nothing left to drop: fall back to text
    // Drop a chunk at once for big arrays, so this stays fast on large results.
    const drop = Math.max(1, Math.floor(biggest.array.length / 8));
    biggest.array.splice(biggest.array.length - drop, drop);
    omitted[biggest.path] = (omitted[biggest.path] ?? 0) + drop;
  }
  return null;
}

function largestArray(v: unknown, path: string): { array: unknown[]; path: string; size: number } | null {
  let best: { array: unknown[]; path: string; size: number } | null = null;
  const consider = (c: { array: unknown[]; path: string; size: number } | null) => {
    if (c && (!best || c.size > best.size)) best = c;
  };
  if (Array.isArray(v)) {
    // A one-row array is a last resort: its row may hold the real list deeper down.
    if (v.length > 0) consider({ array: v, path, size: v.length === 1 ? 0 : bytes(JSON.stringify(v)) });
    v.forEach((x, i) => consider(largestArray(x, `${path}[${i}]`)));
  } else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) consider(largestArray(x, `${path}.${k}`));
  }
  return best;
}
