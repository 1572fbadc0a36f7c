#!/usr/bin/env node
// The CLI entry point: runs the compiled CLI (npm ci builds it via the prepare script).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const cli = new URL('../dist/app/cli.js', import.meta.url);
if (!existsSync(fileURLToPath(cli))) {
  process.stderr.write('switchboard: not built yet; run `npm run build` (npm ci does it for you)\n');
  process.exit(1);
}
const { main, reportFailure } = await import(cli.href);
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  // One line (the stack with --debug or SWITCHBOARD_DEBUG=1); exit 2 for configuration, 1 otherwise.
  (err) => process.exit(reportFailure(err)),
);
