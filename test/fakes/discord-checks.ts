/** Assertions about split Discord messages: every fence balanced, and the parts add up to the original text. */
import { expect } from 'vitest';

const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;

/** The fence open after `text` (its opening line), or null. */
function openFence(text: string): string | null {
  let open: { marker: string; opener: string } | null = null;
  for (const l of text.split('\n')) {
    const m = FENCE.exec(l);
    if (!m) continue;
    if (open) {
      if (m[1]![0] === open.marker[0] && m[1]!.length >= open.marker.length && m[2]!.trim() === '') open = null;
    } else open = { marker: m[1]!, opener: l.trimStart() };
  }
  return open?.opener ?? null;
}

/**
 * Each part is at most `limit` characters with its fences balanced; a part cut
 * inside a fence ends with a closing fence and the next part starts by reopening
 * it with the same info string (language); without those, the parts are the
 * original text, in order, cut at line ends (or inside an overlong line).
 */
export function checkSplit(parts: string[], original: string, limit = 2000): void {
  let pos = 0;
  let reopen: string | null = null;
  for (const [i, part] of parts.entries()) {
    expect(part.length, `part ${i} is too long`).toBeLessThanOrEqual(limit);
    expect(openFence(part), `part ${i} leaves a fence open:\n${part.slice(-300)}`).toBeNull();
    let body = part;
    if (reopen) {
      expect(part.startsWith(`${reopen}\n`), `part ${i} should reopen ${reopen}`).toBe(true);
      body = part.slice(reopen.length + 1);
    }
    reopen = null;
    if (original.startsWith(body, pos)) {
      pos += body.length;
    } else {
      const nl = body.lastIndexOf('\n');
      expect(body.slice(nl + 1), `part ${i} differs from the original`).toMatch(/^(`{3,}|~{3,})$/);
      const inner = body.slice(0, nl);
      expect(original.startsWith(inner, pos), `part ${i} differs from the original at ${pos}`).toBe(true);
      pos += inner.length;
      reopen = openFence(original.slice(0, pos));
      expect(reopen, `part ${i} closes a fence the original did not have open`).not.toBeNull();
    }
    if (original[pos] === '\n') pos++;
  }
  expect(pos).toBe(original.length);
}
