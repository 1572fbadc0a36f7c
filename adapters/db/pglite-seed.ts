import { createReadStream, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { packageRoot } from '../../kernel/paths.js';
import { extractTarStream } from './tar-stream-extract.js';

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
export async function unpackPgliteSeed(dir: string, file = pgliteSeedFile()): Promise<boolean> {
  if (!existsSync(file)) return false;
  const tmp = `${dir}.seed-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true, mode: 0o700 });
  try {
    const gunzip = createGunzip();
    // A read error destroys gunzip, and the extraction's iteration throws it; an extraction that stops early (a refused entry) destroys both.
    pipeline(createReadStream(file), gunzip, () => undefined);
    await extractTarStream(gunzip, tmp);
    rmSync(dir, { recursive: true, force: true }); // empty (needsInit)
    renameSync(tmp, dir);
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
  return true;
}
