/**
 * Splits a long reply into messages of at most `max` characters, preferring
 * paragraph, then line, then word boundaries. A code fence cut in two is
 * closed at the end of one part and reopened at the start of the next.
 *
 * Prefix-stable: while the text grows, every part but the last stays the same
 * (a part only depends on the text it covers and the `max` characters after
 * its start), so a streamed reply never rewrites a finished message.
 */
export function splitMessage(text: string, max: number): string[] {
  const parts: string[] = [];
  let rest = text;
  let reopen = '';
  const budget = Math.max(50, max - 8); // room for a closing/opening fence
  while (rest.length + reopen.length > max) {
    const window = rest.slice(0, budget - reopen.length);
    let cut = lastBoundary(window);
    if (cut <= 0) cut = window.length;
    let part = reopen + rest.slice(0, cut).replace(/\s+$/, '');
    rest = rest.slice(cut).replace(/^\n+/, '');
    reopen = '';
    if (fenceOpen(part)) {
      part += '\n```';
      reopen = '```\n';
    }
    parts.push(part);
  }
  if (rest.length || !parts.length) parts.push(reopen + rest);
  return parts.filter((p, i) => p.length > 0 || i === 0);
}

function lastBoundary(window: string): number {
  const min = Math.floor(window.length / 3);
  for (const sep of ['\n\n', '\n', '. ', ' ']) {
    const at = window.lastIndexOf(sep);
    if (at >= min) return at + sep.length;
  }
  return -1;
}

/** An odd number of ``` fences: a code block is still open at the end. */
function fenceOpen(s: string): boolean {
  return ((s.match(/(^|\n)```/g) ?? []).length) % 2 === 1;
}
