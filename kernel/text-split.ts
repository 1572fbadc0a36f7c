/**
 * Splits a reply into messages of at most `limit` characters, on line
 * boundaries where it can, and never inside a code fence: a fence open at a
 * split is closed at the end of the message and reopened, with the same
 * language, at the start of the next. Greedy from the start, so the messages
 * already full do not change as a streamed reply grows (except the last line of
 * one moving on when it no longer fits).
 */
interface Fence {
  /** The fence characters (``` or ~~~, possibly longer). */
  marker: string;
  /** The opening line, as written ("```ts"). */
  opener: string;
}

const FENCE_RE = /^ {0,3}(`{3,}|~{3,})(.*)$/;

/** The fence state after `line`, given the state before it. */
function nextFence(open: Fence | null, line: string): Fence | null {
  const m = FENCE_RE.exec(line);
  if (!m) return open;
  const marker = m[1]!;
  const info = m[2]!;
  if (open) {
    // Closes only with the same character, at least as long, and no info string.
    return marker[0] === open.marker[0] && marker.length >= open.marker.length && info.trim() === '' ? null : open;
  }
  // A backtick fence's info string may not contain backticks.
  if (marker[0] === '`' && info.includes('`')) return null;
  return { marker, opener: line.trimStart() };
}

/** Cuts a string that is too long for one message: at the last whitespace that fits, else hard (not inside a surrogate pair). */
function cutLong(s: string, room: number): [string, string] {
  let at = room;
  const ws = s.lastIndexOf(' ', room - 1); // the space stays with the head, which must fit
  if (ws > room / 2) at = ws + 1;
  else if (at > 0 && at < s.length && /[\uDC00-\uDFFF]/.test(s[at]!)) at -= 1;
  return [s.slice(0, at), s.slice(at)];
}

export function splitFenced(text: string, limit: number): string[] {
  const out: string[] = [];
  const lines = text.split('\n');
  let cur = '';
  let curHasBody = false; // more than a reopened fence line
  let fence: Fence | null = null;

  const closer = (f: Fence | null) => (f ? `\n${f.marker}` : '');
  const flush = () => {
    if (curHasBody && cur.trim() !== '') out.push(cur + closer(fence));
    cur = fence ? fence.opener : '';
    curHasBody = false;
  };

  for (let i = 0; i < lines.length; i++) {
    let line = lines[i]!;
    for (;;) {
      const after = nextFence(fence, line);
      const sep = cur === '' && !curHasBody ? '' : '\n';
      const needed = cur.length + sep.length + line.length + closer(after).length;
      if (needed <= limit) {
        cur += sep + line;
        curHasBody = true;
        fence = after;
        break;
      }
      if (curHasBody) {
        flush();
        continue;
      }
      // The line alone does not fit an empty message: cut it (a fence line never gets this long).
      const room = limit - cur.length - sep.length - closer(fence).length;
      const [head, tail] = cutLong(line, Math.max(1, room));
      cur += sep + head;
      curHasBody = true;
      flush();
      line = tail;
      if (line === '') break;
    }
  }
  if (curHasBody && cur.trim() !== '') out.push(cur + closer(fence));
  return out;
}
