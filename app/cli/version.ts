import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../kernel/paths.js';

/** The version in package.json (read at run time: the same file from source and from dist/). */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version;
}

/** `switchboard --version | version [--json]`. */
export async function runVersion(opts: { json: boolean }, out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const version = packageVersion();
  out.write(opts.json ? `${JSON.stringify({ version })}\n` : `${version}\n`);
  return 0;
}
