// Word expansion for the classifier: ANSI-C strings, field splitting on $IFS, brace expansion
// and glob detection, on text whose every character carries where it came from (quoted, literal,
// expansion result, unresolved).

/** Decodes a bash `$'...'` string. */
export function ansiC(s: string): string {
  return s.replace(/\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)/gs, (_m, e: string) => {
    const c = e[0]!;
    if (c === 'x' || c === 'u' || c === 'U') return String.fromCodePoint(parseInt(e.slice(1), 16) || 0);
    if (/[0-7]/.test(c)) return String.fromCharCode(parseInt(e, 8));
    const map: Record<string, string> = {
      n: '\n',
      t: '\t',
      r: '\r',
      a: '\x07',
      b: '\b',
      e: '\x1b',
      E: '\x1b',
      f: '\f',
      v: '\v',
      '\\': '\\',
      "'": "'",
      '"': '"',
      '?': '?',
    };
    if (c === 'c') return String.fromCharCode(e.charCodeAt(1) & 31);
    return map[c] ?? `\\${e}`;
  });
}

export interface Field {
  text: string;
  /** Per character: u = unquoted literal, q = quoted, s = unquoted expansion result, Q = quoted expansion, d = unresolved. */
  mask: string;
}

export function splitFields(f: Field, ifs = ' \t\n'): Field[] {
  const out: Field[] = [];
  let cur: Field = { text: '', mask: '' };
  let started = false;
  for (let i = 0; i < f.text.length; i++) {
    const c = f.text[i]!;
    const m = f.mask[i]!;
    if (m === 's' && ifs.includes(c)) {
      if (started) out.push(cur);
      cur = { text: '', mask: '' };
      started = false;
      continue;
    }
    cur.text += c;
    cur.mask += m;
    started = true;
  }
  if (started) out.push(cur);
  return out;
}

export function braceExpand(f: Field, budget = { n: 64 }): Field[] {
  const { text, mask } = f;
  for (let i = 0; i < text.length; i++) {
    if (text[i] !== '{' || mask[i] !== 'u') continue;
    let depth = 0;
    let close = -1;
    const commas: number[] = [];
    for (let j = i + 1; j < text.length; j++) {
      if (mask[j] !== 'u') continue;
      const c = text[j];
      if (c === '{') depth++;
      else if (c === '}') {
        if (depth === 0) {
          close = j;
          break;
        }
        depth--;
      } else if (c === ',' && depth === 0) commas.push(j);
    }
    if (close < 0) continue;
    const alts: Field[] = [];
    if (commas.length) {
      let from = i + 1;
      for (const k of [...commas, close]) {
        alts.push({ text: text.slice(from, k), mask: mask.slice(from, k) });
        from = k + 1;
      }
    } else {
      const m = /^(-?\d+|[a-zA-Z])\.\.(-?\d+|[a-zA-Z])(?:\.\.(-?\d+))?$/.exec(text.slice(i + 1, close));
      if (!m) continue;
      const num = /^-?\d+$/.test(m[1]!);
      const a = num ? parseInt(m[1]!, 10) : m[1]!.charCodeAt(0);
      const b = num ? parseInt(m[2]!, 10) : m[2]!.charCodeAt(0);
      const step = Math.max(1, Math.abs(parseInt(m[3] ?? '1', 10) || 1)) * (b >= a ? 1 : -1);
      for (let v = a, n = 0; (step > 0 ? v <= b : v >= b) && n < 64; v += step, n++) {
        const s = num ? String(v) : String.fromCharCode(v);
        alts.push({ text: s, mask: 'u'.repeat(s.length) });
      }
    }
    const pre: Field = { text: text.slice(0, i), mask: mask.slice(0, i) };
    const post: Field = { text: text.slice(close + 1), mask: mask.slice(close + 1) };
    const out: Field[] = [];
    for (const alt of alts) {
      for (const e of braceExpand({ text: pre.text + alt.text + post.text, mask: pre.mask + alt.mask + post.mask }, budget)) {
        if (budget.n-- <= 0) return out.length ? out : [f];
        out.push(e);
      }
    }
    return out;
  }
  return [f];
}

export function hasGlob(f: Field): boolean {
  for (let i = 0; i < f.text.length; i++) {
    const m = f.mask[i];
    if (m !== 'u' && m !== 's') continue;
    const c = f.text[i];
    if (c === '*' || c === '?') return true;
    if (c === '[' && f.text.indexOf(']', i + 1) > i + 1) return true;
  }
  return false;
}
