import { closeSync, ftruncateSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname, join, normalize, sep } from 'node:path';

/** The largest piece written (or skipped as zeros) at once. */
const PIECE = 64 * 1024;
const ZEROS = Buffer.alloc(PIECE);

interface OpenFile {
  fd: number;
  size: number;
  pos: number;
}

/**
 * Extracts a ustar stream (the subset PGlite's dumpDataDir writes: regular files and directories)
 * into `root` as its chunks arrive, holding one chunk at a time: the seed unpacked whole was a 50 MB
 * buffer that stayed resident until a major GC, which an idle process may not run for hours. Runs of
 * zeros are left as holes (the 16 MB WAL segment is mostly zeros): reads see the same bytes. An entry
 * naming a path outside `root` is refused.
 */
export async function extractTarStream(chunks: AsyncIterable<Buffer>, root: string): Promise<void> {
  let pending: Buffer = Buffer.alloc(0);
  let file: OpenFile | undefined;
  let skip = 0; // the padding after a file's body, to its 512-byte boundary
  let ended = false;
  try {
    for await (const chunk of chunks) {
      if (ended) continue; // what follows the end-of-archive blocks
      const buf = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      let off = 0;
      while (off < buf.length && !ended) {
        if (file) {
          const n = Math.min(file.size - file.pos, buf.length - off, PIECE);
          const piece = buf.subarray(off, off + n);
          if (!piece.equals(ZEROS.subarray(0, n))) writeSync(file.fd, piece, 0, n, file.pos);
          file.pos += n;
          off += n;
          if (file.pos === file.size) file = finish(file);
          continue;
        }
        if (skip) {
          const n = Math.min(skip, buf.length - off);
          skip -= n;
          off += n;
          continue;
        }
        if (buf.length - off < 512) break;
        const header = buf.subarray(off, off + 512);
        off += 512;
        if (header.equals(ZEROS.subarray(0, 512))) {
          ended = true;
          break;
        }
        const entry = parseHeader(header, root);
        skip = (512 - (entry.size % 512)) % 512;
        if (entry.type === '5') mkdirSync(entry.target, { recursive: true, mode: 0o700 });
        else {
          mkdirSync(dirname(entry.target), { recursive: true, mode: 0o700 });
          const opened: OpenFile = { fd: openSync(entry.target, 'w', 0o600), size: entry.size, pos: 0 };
          file = entry.size === 0 ? finish(opened) : opened;
        }
      }
      // A copy: a view would keep the whole chunk alive.
      pending = Buffer.from(buf.subarray(off));
    }
  } finally {
    if (file) closeSync(file.fd);
  }
  if (file || !ended) throw new Error('pglite seed: the archive ends in the middle of an entry');
}

/** Sets the file's full length (a zero tail becomes a hole) and closes it. */
function finish(f: OpenFile): undefined {
  try {
    ftruncateSync(f.fd, f.size);
  } finally {
    closeSync(f.fd);
  }
  return undefined;
}

function parseHeader(header: Buffer, root: string): { type: '0' | '5'; target: string; size: number } {
  const field = (start: number, len: number) => header.toString('latin1', start, start + len).replace(/\0.*$/s, '');
  const prefix = field(345, 155);
  const name = prefix ? `${prefix}/${field(0, 100)}` : field(0, 100);
  const size = Number.parseInt(field(124, 12).trim() || '0', 8);
  const type = field(156, 1) || '0';
  const rel = normalize(name.replace(/^\/+/, ''));
  if (rel.startsWith('..') || rel.split(sep).includes('..')) throw new Error(`pglite seed: entry outside the folder: ${name}`);
  if (type !== '0' && type !== '5') throw new Error(`pglite seed: unsupported entry type ${type} (${name})`);
  if (!Number.isSafeInteger(size) || size < 0) throw new Error(`pglite seed: bad size in entry ${name}`);
  return { type, target: join(root, rel), size: type === '5' ? 0 : size };
}
