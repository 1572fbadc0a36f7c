/**
 * One pino JSON record as one readable line: local time, level, message, then the other fields as
 * key=value (strings with spaces or quotes JSON-quoted, objects as compact JSON, an error as its
 * message). Never more than one line, so that a log stays greppable.
 */

const LEVELS: Record<number, { name: string; color: string }> = {
  10: { name: 'TRACE', color: '90' },
  20: { name: 'DEBUG', color: '36' },
  30: { name: 'INFO ', color: '32' },
  40: { name: 'WARN ', color: '33' },
  50: { name: 'ERROR', color: '31' },
  60: { name: 'FATAL', color: '35' },
};

/** The fields every record has, shown in the prefix or not at all. */
const HIDDEN = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'name', 'v']);

export function prettyLine(json: string, opts: { color?: boolean } = {}): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const level = LEVELS[rec.level as number] ?? { name: String(rec.level).toUpperCase().padEnd(5), color: '0' };
  const paint = (code: string, s: string) => (opts.color ? `\x1b[${code}m${s}\x1b[0m` : s);
  const fields = Object.entries(rec)
    .filter(([k, v]) => !HIDDEN.has(k) && v !== undefined)
    .map(([k, v]) => `${opts.color ? paint('2', `${k}=`) : `${k}=`}${fieldValue(k, v)}`);
  const msg = typeof rec.msg === 'string' ? oneLine(rec.msg) : '';
  return `${paint('90', clock(rec.time))} ${paint(level.color, level.name)} ${msg}${fields.length ? ` ${fields.join(' ')}` : ''}\n`;
}

function fieldValue(key: string, v: unknown): string {
  // pino's error serializer gives { type, message, stack }: the message says it on one line (JSON-quoted).
  if ((key === 'err' || key === 'error') && v && typeof v === 'object' && 'message' in v) {
    const e = v as { type?: string; message?: unknown };
    return JSON.stringify(`${e.type && e.type !== 'Error' ? `${e.type}: ` : ''}${String(e.message)}`);
  }
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  return oneLine(JSON.stringify(v) ?? String(v));
}

function oneLine(s: string): string {
  return s.replace(/\r?\n/g, '\\n');
}

/** HH:MM:SS.mmm in local time (pino's time is epoch milliseconds). */
function clock(t: unknown): string {
  const d = typeof t === 'number' ? new Date(t) : new Date();
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}
