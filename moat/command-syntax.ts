// mvdan-sh, read fast: the parser, and an adapter over the GopherJS-internal syntax tree it
// builds (see below for why the classifier does not use the JS wrappers).
import type shModule from 'mvdan-sh';
import type { ShNode } from 'mvdan-sh';
import { requireWithCodeCache } from '../kernel/code-cache.js';
import { SwitchboardError } from '../kernel/errors.js';

// Loaded as CommonJS, not imported: an ESM import of this 1.5 MB file makes Node scan it for named
// exports (cjs-module-lexer), which cost more CPU than loading it; and with V8's code cache, which
// halves what compiling it costs every CLI run and every process start (bench/cli.js).
const shLoaded = requireWithCodeCache<typeof shModule>('mvdan-sh', import.meta.url);
const sh = shLoaded.exports;
const syntax = sh.syntax;
/** One cached parser per option set (with and without comments kept). */
const parsers = new Map<boolean, ReturnType<typeof syntax.NewParser>>();

export class ParseFailure extends SwitchboardError {
  readonly code = 'shell_parse_failed';
}

/**
 * Parses `src` and returns the raw (GopherJS-internal) syntax.File; see the adapter below.
 * `keepComments`: comments stay in the tree (the approval rules refuse commands that have one).
 */
export function parseShell(src: string, opts: { keepComments?: boolean } = {}): Raw {
  const keep = opts.keepComments === true;
  let parser = parsers.get(keep);
  if (!parser) parsers.set(keep, (parser = keep ? syntax.NewParser(syntax.KeepComments(true)) : syntax.NewParser()));
  try {
    const file = parser.Parse(src, '') as ShNode;
    const raw = (file as { __internal_object__?: Raw }).__internal_object__;
    if (nodeType(raw) !== 'File') throw new TypeError('unexpected mvdan-sh build (no internal syntax tree)');
    shLoaded.save(); // after the first parse: the parser's functions are compiled and go in the cache
    return raw;
  } catch (e) {
    if (e instanceof TypeError && e.message.startsWith('unexpected mvdan-sh build')) throw e;
    parsers.delete(keep); // never reuse a parser that failed mid-parse
    const msg = typeof (e as { Error?: unknown })?.Error === 'function' ? String((e as { Error: () => string }).Error()) : String(e);
    throw new ParseFailure(msg.replace(/^:?\d+:\d+:\s*/, ''));
  }
}

// ---------------------------------------------------------------------------------------------
// Raw syntax-tree adapter
//
// The JS wrappers of mvdan-sh externalise whole sub-trees on every property access (a `Pos()` call
// costs ~70µs), which made a walk cost milliseconds. The walker therefore reads the GopherJS-internal
// objects behind them (`__internal_object__`), which mirror the Go structs of mvdan.cc/sh/v3/syntax
// exactly: pointers are objects whose `constructor.string` is the Go type (`*syntax.CallExpr`),
// slices are `{$array, $offset, $length}`, nil pointers are `Type.nil`, nil interfaces are a
// method-less placeholder, strings are Go byte strings (UTF-8 bytes as char codes), and Go
// methods such as `Pos()`/`End()` are callable. mvdan-sh is pinned (0.10.1) and the tests cover
// this adapter.

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Raw = any;

export function isNil(x: Raw): boolean {
  if (x == null || typeof x !== 'object') return true;
  const c = x.constructor;
  return !c || typeof c.string !== 'string' || x === c.nil;
}

/** Node type name ('CallExpr', 'Lit', ...) or '' for nil. */
export function nodeType(x: Raw): string {
  if (isNil(x)) return '';
  const t = x.constructor.string as string;
  return t.startsWith('*syntax.') ? t.slice(8) : t;
}

/** A Go slice as a JS array (empty for nil). */
export function items(s: Raw): Raw[] {
  if (!s || !s.$array) return [];
  const out: Raw[] = new Array(s.$length);
  for (let i = 0; i < s.$length; i++) out[i] = s.$array[s.$offset + i];
  return out;
}

export function count(s: Raw): number {
  return s && s.$array ? (s.$length as number) : 0;
}

/** Go byte string → JS string. */
export function gstr(s: unknown): string {
  if (typeof s !== 'string') return '';
  // eslint-disable-next-line no-control-regex
  return /[^\x00-\x7f]/.test(s) ? Buffer.from(s, 'latin1').toString('utf8') : s;
}

export function litValue(x: Raw): string | undefined {
  return isNil(x) ? undefined : gstr(x.Value);
}

/** Pre-order walk over syntax nodes; `fn` returning false skips a node's children. */
export function walk(node: Raw, fn: (n: Raw) => boolean): void {
  if (isNil(node) || !fn(node)) return;
  for (const key of Object.keys(node)) {
    if (key === '$val') continue;
    const v = node[key];
    if (v == null || typeof v !== 'object') continue;
    if (v.$array !== undefined) {
      for (const e of items(v))
        if (e && typeof e === 'object' && typeof e.constructor?.string === 'string' && e.constructor.string.startsWith('*syntax.')) walk(e, fn);
      continue;
    }
    const t = v.constructor?.string;
    if (typeof t === 'string' && t.startsWith('*syntax.') && t !== '*syntax.Pos' && v !== v.constructor.nil) walk(v, fn);
  }
}
