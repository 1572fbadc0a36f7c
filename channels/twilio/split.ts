/**
 * Splits a reply into messages of at most `max` characters (UTF-16 code units,
 * never fewer than Twilio counts), breaking at the last paragraph, then
 * sentence, then line, then word boundary that fits, and numbers them "(1/3) "
 * when there is more than one. The number counts against the limit.
 */
export function splitMessage(text: string, max: number): string[] {
  const body = text.trim();
  if (!body) return [];
  if (body.length <= max) return [body];
  for (let digits = 1; ; digits++) {
    const budget = max - (2 * digits + 4); // "(" d "/" d ") "
    if (budget < 20) throw new Error(`cannot split into messages of ${max} characters`);
    const chunks = chunk(body, budget);
    if (String(chunks.length).length <= digits) return chunks.map((c, i) => `(${i + 1}/${chunks.length}) ${c}`);
  }
}

function chunk(text: string, budget: number): string[] {
  const out: string[] = [];
  let rest = text;
  while (rest.length > budget) {
    const cut = breakAt(rest, budget);
    const head = rest.slice(0, cut).trimEnd();
    if (head) out.push(head);
    rest = rest.slice(cut).trimStart();
  }
  if (rest) out.push(rest);
  return out;
}

/** Where to cut `s` (longer than budget) so that s.slice(0, cut) fits. */
function breakAt(s: string, budget: number): number {
  const window = s.slice(0, budget + 1); // the character right after the limit may be the space we cut at
  const far = Math.floor(budget * 0.4); // a boundary nearer the start than this wastes a message
  const para = window.lastIndexOf('\n\n');
  if (para >= budget * 0.6) return para;
  const sentence = lastMatchEnd(window, /[.!?](?:["')\]]*)(?=\s)/g, budget);
  if (sentence >= far) return sentence;
  if (para >= far) return para;
  const line = window.lastIndexOf('\n');
  if (line >= far && line <= budget) return line;
  const space = Math.max(window.lastIndexOf(' '), window.lastIndexOf('\t'));
  if (space > 0 && space <= budget) return space;
  // One long word: cut at the limit, never inside a surrogate pair.
  const code = s.charCodeAt(budget - 1);
  return code >= 0xd800 && code <= 0xdbff ? budget - 1 : budget;
}

function lastMatchEnd(s: string, re: RegExp, limit: number): number {
  let end = -1;
  for (const m of s.matchAll(re)) {
    const e = m.index + m[0].length;
    if (e <= limit) end = e;
  }
  return end;
}
