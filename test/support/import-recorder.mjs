// Loaded with `node --import` (NODE_OPTIONS): registers a resolve hook that prints, once per
// package, "IMPORTED <package>" to stderr for every bare import made by a file outside
// node_modules — what the gateway's own code loads at start (test/embedded-imports.test.ts).
import { register } from 'node:module';

register(
  `data:text/javascript,${encodeURIComponent(`
const seen = new Set();
export async function resolve(specifier, context, next) {
  const parent = context.parentURL ?? '';
  if (!/^[./]|^node:|^file:|^data:/.test(specifier) && parent.startsWith('file:') && !parent.includes('/node_modules/')) {
    const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0];
    if (!seen.has(name)) { seen.add(name); process.stderr.write('IMPORTED ' + name + '\\n'); }
  }
  return next(specifier, context);
}`)}`,
);
