import { closeSync, existsSync, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, normalize, sep } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { packageRoot } from '../../kernel/paths.js';

/**
 * A fresh PGlite data folder costs an initdb (~10 s of CPU, and ~500 MB of WASM memory that stays
 * mapped for the life of the process) and the migrations (~1-3 s of CPU). The seed is that folder
 * made once per PGlite version (pglite-seed-write.ts) and shipped in adapters/db/seed/; a fresh folder
 * is unpacked from it instead. The folder format belongs to the WASM build (32-bit, little-endian on every
 * host), so a seed made by the same PGlite version is what initdb would have written.
 */
export const pgliteSeedDir = join(packageRoot, 'adapters', 'db', 'seed');

/** The installed PGlite's version (the seed is valid only for it). */
export function pgliteVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  let dir = dirname(entry);
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
}

export function pgliteSeedFile(version = pgliteVersion()): string {
  return join(pgliteSeedDir, `pglite-${version}.tar.gz`);
}

/** True when dir holds no Postgres cluster yet (missing or empty). */
export function needsInit(dir: string): boolean {
  return !existsSync(join(dir, 'PG_VERSION')) && (!existsSync(dir) || readdirSync(dir).length === 0);
}

/**
 * Unpacks the seed into dir (which must be missing or empty). It is written beside dir and renamed
 * into place, so a crash mid-way leaves no half cluster for the next start to trust.
 * Returns false when no seed ships for this PGlite version (the caller runs initdb).
 */
export function unpackPgliteSeed(dir: string, file = pgliteSeedFile()): boolean {
  if (!existsSync(file)) return false;
  const tmp = `${dir}.seed-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true, mode: 0o700 });
  try {
    extractTar(gunzipSync(readFileSync(file)), tmp);
    rmSync(dir, { recursive: true, force: true }); // empty (needsInit)
    renameSync(tmp, dir);
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
  return true;
}

/** Writes data, leaving its zero tail a hole (the 16 MB WAL segment is mostly zeros): reads see the same bytes. */
function writeSparse(file: string, data: Buffer): void {
  let end = data.length;
  while (end > 0 && data[end - 1] === 0) end--;
  const fd = openSync(file, 'w', 0o600);
  try {
    writeSync(fd, data, 0, end);
    if (end < data.length) ftruncateSync(fd, data.length);
  } finally {
    closeSync(fd);
  }
}

/** The ustar subset PGlite's dumpDataDir writes: regular files and directories. */
function extractTar(buf: Buffer, root: string): void {
  for (let off = 0; off + 512 <= buf.length; ) {
    const header = buf.subarray(off, off + 512);
    if (header.every((b) => b === 0)) break; // end of archive
    const field = (start: number, len: number) => header.toString('latin1', start, start + len).replace(/\0.*$/s, '');
    const prefix = field(345, 155);
    const name = prefix ? `${prefix}/${field(0, 100)}` : field(0, 100);
    const size = Number.parseInt(field(124, 12).trim() || '0', 8);
    const type = field(156, 1) || '0';
    const rel = normalize(name.replace(/^\/+/, ''));
    if (rel.startsWith('..') || rel.split(sep).includes('..')) throw new Error(`pglite seed: entry outside the folder: ${name}`);
    const target = join(root, rel);
    const body = off + 512;
    if (type === '5') mkdirSync(target, { recursive: true, mode: 0o700 });
    else if (type === '0') {
      mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
      writeSparse(target, buf.subarray(body, body + size));
    } else throw new Error(`pglite seed: unsupported entry type ${type} (${name})`);
    off = body + Math.ceil(size / 512) * 512;
  }
}
