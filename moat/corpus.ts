import { readFileSync } from 'node:fs';

/**
 * Reads a line-oriented corpus file: one entry per line; blank lines and lines whose first
 * non-blank character is `#` are dropped. Lines are returned verbatim otherwise (no trimming of
 * inner content, only of a trailing `\r` and surrounding whitespace), and duplicates are kept.
 */
export function loadLines(path: string): string[] {
  const out: string[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const entry = line.replace(/\r$/, '').trim();
    if (entry === '' || entry.startsWith('#')) continue;
    out.push(entry);
  }
  return out;
}
