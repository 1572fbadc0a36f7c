// Which arguments of a command are files it reads, so that reads outside the workspace and reads
// of credential material can be seen. One entry per command: how its options take values (so an
// option's value is not mistaken for a file), which options name files it reads, and which
// operands are files (grep's first operand is a pattern, awk's a program, uniq's second its
// output, tr has none). Commands that only look at names (basename, dirname, echo) are absent, and
// so is df, whose operand only picks which mounted filesystem to report (df alone reports all).
import type { Arg } from './command-args.js';
import { type OptionTable, scanOperands, scanOptions } from './command-options.js';

// 'read': a file read; 'program': a file read and run as code (awk -f); 'code': the option gives the
// pattern/program, so every operand is a file; 'skip': neither.
type ReadKind = 'read' | 'program' | 'code' | 'skip';

interface ReadSpec {
  /** Options: 'read' ones name files read; 'code' ones give the pattern/program, so every operand is a file. */
  table: OptionTable<ReadKind>;
  /** The first operand is a pattern, program or filter unless a 'code' option is given. */
  firstIsCode?: boolean;
  /** Only the first N operands are read (uniq's second operand is its output). */
  maxOperands?: number;
  /** No operand is a file (tr): only file options count. */
  noOperands?: boolean;
  /** The last operand is a destination, not read (cp, mv, scp, rsync). */
  dropLast?: boolean;
  /** The first operand is written, not read (zip's archive). */
  dropFirst?: boolean;
  /** Operands written as key=PATH (dd if=). */
  keyed?: string;
  /** Operands such as VAR=value are assignments, not files (awk). */
  skipAssignments?: boolean;
  /** Operands after one of these words are arguments, not files (jq --args). */
  stopWords?: string[];
  /** Only operands with a slash are files (man: others are page names). */
  slashOnly?: boolean;
  /** Operands are read recursively: a folder that holds credentials counts as credentials. */
  recursive?: boolean;
  /** Only names and metadata are read, not contents (ls, stat, du): no credential material leaks. */
  namesOnly?: boolean;
}

const t = (argShort = '', argLong: string[] = [], options: OptionTable<ReadKind>['options'] = []): OptionTable<ReadKind> => ({ argShort, argLong, options });
const plain = (argShort = '', argLong: string[] = []): ReadSpec => ({ table: t(argShort, argLong) });
const names = (spec: ReadSpec): ReadSpec => ({ ...spec, namesOnly: true });

const GREP: ReadSpec = {
  table: t(
    'ABCmdD',
    [
      'max-count',
      'after-context',
      'before-context',
      'context',
      'label',
      'include',
      'exclude',
      'exclude-dir',
      'binary-files',
      'devices',
      'directories',
      'color',
      'colour',
    ],
    [
      { short: 'e', long: ['regexp'], kind: 'code', what: 'pattern' },
      { short: 'f', long: ['file'], kind: 'read', what: 'pattern file' },
      { long: ['exclude-from'], kind: 'read', what: 'exclude list' },
    ],
  ),
  firstIsCode: true,
};
const AWK: ReadSpec = {
  table: t(
    'Fvil',
    ['field-separator', 'assign', 'include', 'load'],
    [
      { short: 'e', long: ['source'], kind: 'code', what: 'program' },
      { short: 'fE', long: ['file', 'exec'], kind: 'program', what: 'program file' },
    ],
  ),
  firstIsCode: true,
  skipAssignments: true,
};
const SED: ReadSpec = {
  table: t(
    'l',
    ['line-length'],
    [
      { short: 'e', long: ['expression'], kind: 'code', what: 'script' },
      { short: 'f', long: ['file'], kind: 'program', what: 'script file' },
      { short: 'i', long: ['in-place'], kind: 'skip', what: 'in place', optional: true },
    ],
  ),
  firstIsCode: true,
};
const JQ: ReadSpec = {
  table: {
    ...t(
      'L',
      ['indent'],
      [
        { short: 'f', long: ['from-file'], kind: 'code', what: 'filter file' },
        { long: ['slurpfile', 'rawfile'], kind: 'read', what: 'data file', pair: true },
      ],
    ),
    argLong2: ['arg', 'argjson'],
  },
  firstIsCode: true,
  stopWords: ['--args', '--jsonargs'],
};
const RG: ReadSpec = {
  table: t(
    'ABCEgjmMrtTd',
    [
      'type',
      'type-not',
      'glob',
      'iglob',
      'max-count',
      'max-depth',
      'threads',
      'replace',
      'encoding',
      'sort',
      'sortr',
      'context',
      'colors',
      'engine',
      'pre',
      'pre-glob',
      'type-add',
      'max-filesize',
      'path-separator',
    ],
    [
      { short: 'e', long: ['regexp'], kind: 'code', what: 'pattern' },
      { short: 'f', long: ['file'], kind: 'read', what: 'pattern file' },
      { long: ['files', 'type-list'], kind: 'code', what: 'no pattern', flag: true },
      { long: ['ignore-file'], kind: 'read', what: 'ignore file' },
    ],
  ),
  firstIsCode: true,
};
const CHECKSUM = plain('al', ['algorithm', 'length']);
const DIFF: ReadSpec = {
  table: t(
    'CDFIUxSLW',
    [
      'context',
      'unified',
      'ifdef',
      'show-function-line',
      'ignore-matching-lines',
      'exclude',
      'starting-file',
      'label',
      'width',
      'tabsize',
      'line-format',
      'old-line-format',
      'new-line-format',
      'unchanged-line-format',
      'old-group-format',
      'new-group-format',
      'changed-group-format',
      'unchanged-group-format',
      'horizon-lines',
      'color',
      'palette',
    ],
    [
      { short: 'X', long: ['exclude-from'], kind: 'read', what: 'exclude list' },
      { long: ['from-file', 'to-file'], kind: 'read', what: 'file' },
    ],
  ),
};
const ZCAT = plain('S', ['suffix']);
const COPY: ReadSpec = {
  table: t('tS', ['target-directory', 'suffix', 'backup', 'sparse', 'reflink', 'preserve', 'no-preserve']),
  dropLast: true,
  recursive: true,
};

export const READ_SPECS: Record<string, ReadSpec> = {
  cat: plain(),
  tac: plain('s', ['separator']),
  nl: plain('bdfhilnsvw', [
    'body-numbering',
    'section-delimiter',
    'footer-numbering',
    'header-numbering',
    'line-increment',
    'join-blank-lines',
    'number-format',
    'number-separator',
    'starting-line-number',
    'number-width',
  ]),
  head: plain('cn', ['bytes', 'lines']),
  tail: plain('cns', ['bytes', 'lines', 'pid', 'sleep-interval', 'max-unchanged-stats']),
  less: plain('bhjkoOpPtTxyz#D', ['prompt', 'pattern', 'tag', 'tag-file', 'log-file', 'LOG-FILE', 'lesskey-file', 'shift', 'window', 'tabs', 'header']),
  more: plain('n', ['lines']),
  most: plain(),
  pg: plain('p'),
  bat: plain('lHrmLp', ['language', 'theme', 'style', 'tabs', 'wrap', 'terminal-width', 'line-range', 'highlight-line', 'map-syntax', 'file-name', 'pager']),
  batcat: plain('lHrmLp', ['language', 'theme', 'style', 'pager']),
  wc: { table: t('', [], [{ long: ['files0-from'], kind: 'read', what: 'file list' }]) },
  cut: plain('bcdf', ['bytes', 'characters', 'delimiter', 'fields', 'output-delimiter']),
  paste: plain('d', ['delimiters']),
  join: plain('aejot12', []),
  comm: plain('', ['output-delimiter']),
  column: plain('csoNlREWHOnrCTd', [
    'columns',
    'separator',
    'output-separator',
    'table-columns',
    'table-name',
    'table-order',
    'table-right',
    'table-truncate',
    'table-noextreme',
    'table-wrap',
    'table-hide',
    'tree',
    'tree-id',
    'tree-parent',
  ]),
  fold: plain('w', ['width']),
  fmt: plain('pwg', ['prefix', 'width', 'goal']),
  expand: plain('t', ['tabs']),
  unexpand: plain('t', ['tabs']),
  pr: plain('DhlNowW', ['date-format', 'header', 'length', 'first-line-number', 'indent', 'width', 'page-width', 'sep-string']),
  od: plain('AjNSt', ['address-radix', 'skip-bytes', 'read-bytes', 'strings', 'format', 'width']),
  hexdump: { table: t('ens', ['format', 'length', 'skip'], [{ short: 'f', long: ['format-file'], kind: 'read', what: 'format file' }]) },
  hd: plain('ens'),
  xxd: plain('cglosn', ['cols', 'len', 'seek', 'name', 'groupsize', 'offset']),
  strings: plain('nteTs', ['bytes', 'radix', 'encoding', 'target', 'output-separator']),
  file: {
    table: t('eFP', ['exclude', 'separator', 'parameter'], [{ short: 'mf', long: ['magic-file', 'files-from'], kind: 'read', what: 'magic/name file' }]),
  },
  stat: names(plain('c', ['format', 'printf'])),
  realpath: names({ table: t('', [], [{ long: ['relative-to', 'relative-base'], kind: 'read', what: 'base' }]) }),
  readlink: names(plain()),
  namei: names(plain()),
  lsattr: names(plain()),
  ls: names(plain('ITw', ['block-size', 'format', 'hide', 'ignore', 'indicator-style', 'quoting-style', 'sort', 'time', 'time-style', 'tabsize', 'width'])),
  dir: names(plain('ITw')),
  vdir: names(plain('ITw')),
  exa: names(plain('LIst', ['level', 'ignore-glob', 'sort', 'time', 'time-style', 'color'])),
  eza: names(plain('LIst', ['level', 'ignore-glob', 'sort', 'time', 'time-style', 'color'])),
  lsd: names(plain('I', ['depth', 'ignore-glob', 'sort', 'color'])),
  tree: names(plain('LPIoHT', ['filelimit', 'charset', 'sort', 'timefmt'])),
  du: {
    namesOnly: true,
    table: t(
      'Bdt',
      ['block-size', 'max-depth', 'threshold', 'exclude', 'time-style', 'time'],
      [{ short: 'X', long: ['exclude-from', 'files0-from'], kind: 'read', what: 'file list' }],
    ),
  },
  md5sum: CHECKSUM,
  sha1sum: CHECKSUM,
  sha224sum: CHECKSUM,
  sha256sum: CHECKSUM,
  sha384sum: CHECKSUM,
  sha512sum: CHECKSUM,
  b2sum: CHECKSUM,
  cksum: CHECKSUM,
  sum: CHECKSUM,
  shasum: CHECKSUM,
  md5: plain('s'),
  cmp: plain('in', ['ignore-initial', 'bytes']),
  diff: DIFF,
  colordiff: DIFF,
  diff3: plain('L', ['label', 'diff-program']),
  sdiff: plain('owI', ['output', 'width', 'ignore-matching-lines', 'diff-program']),
  wdiff: plain('wxyz'),
  sort: {
    table: t(
      'kotTS',
      ['key', 'output', 'field-separator', 'temporary-directory', 'buffer-size', 'parallel', 'batch-size', 'compress-program', 'sort'],
      [{ long: ['files0-from', 'random-source'], kind: 'read', what: 'input list' }],
    ),
  },
  uniq: { ...plain('fsw', ['skip-fields', 'skip-chars', 'check-chars']), maxOperands: 1 },
  tr: { table: t(), noOperands: true },
  rev: plain(),
  tsort: plain(),
  ptx: plain('bFgiMoSW'),
  look: { ...plain('t'), firstIsCode: true },
  iconv: plain('fto', ['from-code', 'to-code', 'output']),
  zcat: ZCAT,
  gzcat: ZCAT,
  zless: ZCAT,
  zmore: ZCAT,
  bzcat: plain(),
  bzless: plain(),
  xzcat: plain(),
  xzless: plain(),
  zstdcat: plain(),
  lzcat: plain(),
  zgrep: GREP,
  zegrep: GREP,
  zfgrep: GREP,
  grep: GREP,
  egrep: GREP,
  fgrep: GREP,
  rg: RG,
  ag: { ...plain('ABCGgmpW', ['depth', 'ignore']), firstIsCode: true },
  ack: { ...plain('ABCm', ['type', 'match']), firstIsCode: true },
  awk: AWK,
  gawk: AWK,
  mawk: AWK,
  nawk: AWK,
  sed: SED,
  gsed: SED,
  jq: JQ,
  gojq: JQ,
  yq: { ...plain('oIp', ['output-format', 'indent', 'input-format']), firstIsCode: true },
  base64: plain('w', ['wrap']),
  base32: plain('w', ['wrap']),
  basenc: plain('w', ['wrap']),
  zipinfo: plain(),
  jless: plain(),
  glow: plain('sw', ['style', 'width']),
  xmllint: plain('', ['output', 'path', 'xpath', 'schema', 'relaxng', 'dtdvalid', 'encode']),
  yamllint: plain('cdf', ['config-file', 'config-data', 'format']),
  shellcheck: plain('eifosSPW', ['exclude', 'include', 'format', 'enable', 'shell', 'severity', 'source-path', 'wiki-link-count']),
  tokei: plain('ceEtsoS'),
  cloc: plain(),
  scc: plain('fiMsw'),
  ncdu: plain('oOfe'),
  dust: plain('dnX'),
  source: { ...plain(), maxOperands: 1 },
  '.': { ...plain(), maxOperands: 1 },
  man: {
    table: t(
      'PpTXMRLmSserECH',
      ['pager', 'preprocessor', 'troff-device', 'manpath', 'locale', 'systems', 'sections', 'extension', 'prompt', 'encoding', 'config-file'],
      [{ short: 'C', long: ['config-file'], kind: 'read', what: 'config' }],
    ),
    slashOnly: true,
  },
  dd: { table: t(), noOperands: true, keyed: 'if' },
  touch: { table: t('dt', ['date', 'time'], [{ short: 'r', long: ['reference'], kind: 'read', what: 'reference file' }]), noOperands: true },
  cp: COPY,
  mv: COPY,
  install: { ...COPY, table: t('gmoStT', ['group', 'mode', 'owner', 'suffix', 'target-directory', 'strip-program']) },
  scp: { table: t('cDFiJlmoPSX'), dropLast: true, recursive: true },
  rsync: {
    table: t('eBfMT', [
      'rsh',
      'rsync-path',
      'exclude',
      'include',
      'filter',
      'log-file',
      'temp-dir',
      'chmod',
      'chown',
      'timeout',
      'bwlimit',
      'backup-dir',
      'partial-dir',
      'compare-dest',
      'copy-dest',
      'link-dest',
      'files-from',
      'exclude-from',
      'include-from',
      'password-file',
    ]),
    dropLast: true,
    recursive: true,
  },
  zip: { table: t('bnPtZsixO'), recursive: true, dropFirst: true },
  gpg: { table: t('ruko', ['recipient', 'local-user', 'default-key', 'output', 'keyserver', 'homedir']) },
  openssl: { table: t(), noOperands: true },
  xargs: { table: t('dEILnPs', [], [{ short: 'a', long: ['arg-file'], kind: 'read', what: 'argument file' }]), noOperands: true },
  journalctl: {
    table: t(
      'unpSUbotMgFcIiD',
      ['unit', 'lines', 'priority', 'since', 'until', 'boot', 'output', 'identifier', 'machine', 'grep', 'field', 'cursor', 'user-unit'],
      [{ short: 'D', long: ['file', 'directory', 'root'], kind: 'read', what: 'journal' }],
    ),
    noOperands: true,
  },
};

export interface ReadPath {
  path: string;
  /** Contents are read (not just names and metadata). */
  contents: boolean;
  /** The file is a program the command runs (awk -f, sed -f, source). */
  program?: boolean;
  /** Read recursively (a folder of credentials counts). */
  recursive: boolean;
  /** The option or operand it came from, for reasons. */
  via: string;
}

function findReads(args: Arg[]): ReadPath[] {
  const out: ReadPath[] = [];
  let i = 0;
  while (i < args.length && /^-(?:[HLP]|D|O\d*)$/.test(args[i]!.text)) i += args[i]!.text === '-D' ? 2 : 1;
  while (i < args.length && !/^[-(!),]/.test(args[i]!.text)) out.push({ path: args[i++]!.text, recursive: false, contents: false, via: 'find' });
  for (; i < args.length; i++) {
    const w = args[i]!.text;
    if (/^-(?:newer|anewer|cnewer|samefile|newer[aBcmt][aBcmt]t?)$/.test(w) && args[i + 1])
      out.push({ path: args[++i]!.text, recursive: false, contents: false, via: `find ${w}` });
  }
  return out;
}

function tarReads(args: Arg[]): ReadPath[] {
  const first = args[0]?.text ?? '';
  const creating =
    (/^[A-Za-z]+$/.test(first) && /[cruA]/.test(first)) ||
    args.some((a) => /^--(?:create|append|update)$/.test(a.text) || (/^-[A-Za-z]+$/.test(a.text) && /^-[^CFIXTgfbHKLNV]*[cru]/.test(a.text)));
  if (!creating) return [];
  const table: OptionTable<ReadKind> = {
    argShort: 'bCfFgHIKLNTVX',
    oldStyle: true,
    abbrev: true,
    argLong: [
      'file',
      'directory',
      'exclude',
      'transform',
      'xform',
      'owner',
      'group',
      'mode',
      'mtime',
      'use-compress-program',
      'to-command',
      'checkpoint-action',
      'files-from',
      'exclude-from',
      'listed-incremental',
      'index-file',
      'label',
      'newer',
      'suffix',
      'format',
    ],
    options: [],
  };
  return scanOperands(table, args).map((a) => ({ path: a.text, recursive: true, contents: true, via: 'tar' }));
}

/** The table knows which arguments of `name` are files it reads. */
export function knowsReads(name: string): boolean {
  return Object.prototype.hasOwnProperty.call(READ_SPECS, name) || /^(?:g?find|g?tar|bsdtar)$/.test(name);
}

/** The files `name` reads, as far as its arguments tell. */
export function readPaths(name: string, args: Arg[]): ReadPath[] {
  if (name === 'find' || name === 'gfind') return findReads(args);
  if (name === 'tar' || name === 'gtar' || name === 'bsdtar') return tarReads(args);
  const spec = READ_SPECS[name];
  if (!spec) return [];
  const out: ReadPath[] = [];
  let codeGiven = false;
  for (const h of scanOptions(spec.table, args)) {
    if (h.spec.kind === 'code') codeGiven = true;
    else if ((h.spec.kind === 'read' || h.spec.kind === 'program') && h.value) {
      out.push({ path: h.value, recursive: false, contents: true, program: h.spec.kind === 'program', via: `${name} ${h.spelling}` });
    }
  }
  if (spec.noOperands) {
    if (spec.keyed)
      for (const a of args)
        if (a.text.startsWith(`${spec.keyed}=`))
          out.push({ path: a.text.slice(spec.keyed.length + 1), recursive: false, contents: true, via: `${name} ${spec.keyed}=` });
    return out;
  }
  let ops = scanOperands(spec.table, args);
  if (spec.stopWords) {
    const k = ops.findIndex((a) => spec.stopWords!.includes(a.text));
    if (k >= 0) ops = ops.slice(0, k);
    const stop = args.findIndex((a) => spec.stopWords!.includes(a.text));
    if (stop >= 0) ops = ops.filter((a) => args.indexOf(a) < stop);
  }
  if (spec.firstIsCode && !codeGiven) ops = ops.slice(1);
  if (spec.skipAssignments) ops = ops.filter((a) => !/^[A-Za-z_][A-Za-z0-9_]*=/.test(a.text));
  if (spec.slashOnly && !args.some((a) => a.text === '-l' || a.text === '--local-file')) ops = ops.filter((a) => a.text.includes('/'));
  if (spec.dropLast && !args.some((a) => /^-[a-zA-Z]*t$|^--target-directory/.test(a.text))) ops = ops.slice(0, -1);
  if (spec.dropFirst) ops = ops.slice(1);
  if (spec.maxOperands !== undefined) ops = ops.slice(0, spec.maxOperands);
  const runs = name === 'source' || name === '.';
  for (const a of ops) if (a.text !== '-') out.push({ path: a.text, recursive: !!spec.recursive, contents: !spec.namesOnly, program: runs, via: name });
  return out;
}
