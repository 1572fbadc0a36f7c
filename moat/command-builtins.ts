// bash builtins that change what a name runs or run code later: alias, enable, hash -p, bind -x,
// complete/compgen -C, mapfile -C, fc (re-runs history), trap. Function definitions that shadow
// a command are reported by the classifier (it sees the FuncDecl), PATH and friends by
// ./command-env.ts, `command`/`builtin`/`exec` are unwrapped by the classifier.
import { positionals, type Rule } from './command-args.js';
import { scanOptions } from './command-options.js';

export const alias: Rule = (v, ctx) => {
  for (const a of v.args) {
    const m = /^([^=\s]+)=(.*)$/s.exec(a.text);
    if (m) {
      ctx.add('caution', `defines an alias (${a.text})`);
      ctx.classifyCode(m[2]!, 'alias');
    }
  }
};

/** enable -f lib name (loads a builtin from a library), enable -n name (a file of that name runs instead), enable name. */
export const enable: Rule = (v, ctx) => {
  const lib = scanOptions({ options: [{ short: 'f', kind: 'lib', what: '' }] }, v.args)[0]?.value;
  const names = positionals(v.args, 'f').map((a) => a.text);
  if (lib) {
    ctx.add('caution', `enable -f loads builtins from a shared library (${lib})`);
    const f = ctx.fetched(lib);
    if (f) ctx.add('dangerous', `enable -f loads a library this command line ${f === 'download' ? 'downloaded' : 'decoded'} (${lib})`);
    return;
  }
  if (!names.length) return; // lists builtins
  const off = v.args.some((a) => /^-[a-z]*n/.test(a.text));
  ctx.add(
    'caution',
    off
      ? `disables builtins so programs of the same name run instead (enable -n ${names.join(' ')})`
      : `changes which builtins are enabled (enable ${names.join(' ')})`,
  );
};

/** hash -p path name: makes `name` run `path`. */
export const hash: Rule = (v, ctx) => {
  const p = scanOptions({ options: [{ short: 'p', kind: 'path', what: '' }] }, v.args)[0]?.value;
  if (p === undefined) return;
  const names = positionals(v.args, 'pt').map((a) => a.text);
  ctx.add('caution', `hash -p makes ${names.join(' ') || 'a name'} run ${p}`);
  const f = ctx.fetched(p);
  if (f) ctx.add('dangerous', `hash -p points a command at a file this command line ${f === 'download' ? 'downloaded' : 'decoded'} (${p})`);
};

/** bind -x 'keyseq: shell-command'. */
export const bind: Rule = (v, ctx) => {
  for (const h of scanOptions({ argShort: 'mqurfs', options: [{ short: 'x', kind: 'x', what: '' }] }, v.args)) {
    ctx.add('caution', `binds a key to a shell command (bind -x ${h.value})`);
    const cmd = /^[^:]*:\s*["']?(.*?)["']?$/s.exec(h.value)?.[1];
    if (cmd) ctx.classifyCode(cmd, 'bind -x');
  }
};

/** complete/compgen -C command, -F function. */
export const complete: Rule = (v, ctx) => {
  for (const h of scanOptions(
    {
      argShort: 'oAGWPSX',
      options: [
        { short: 'C', kind: 'C', what: '' },
        { short: 'F', kind: 'F', what: '' },
      ],
    },
    v.args,
  )) {
    if (h.spec.kind === 'C') {
      ctx.add('caution', `${v.name} -C runs a command to complete words (${h.value})`);
      ctx.classifyCode(h.value, `${v.name} -C`);
    } else if (v.name === 'complete') ctx.add('caution', `complete -F runs a function to complete words (${h.value})`);
  }
};

/** mapfile/readarray -C callback. */
export const mapfile: Rule = (v, ctx) => {
  const cb = scanOptions({ argShort: 'dnOsuc', options: [{ short: 'C', kind: 'C', what: '' }] }, v.args)[0]?.value;
  if (cb) {
    ctx.add('caution', `${v.name} -C runs a callback for each line (${cb})`);
    ctx.classifyCode(cb, `${v.name} -C`);
  }
};

/** fc: -l lists; -s re-runs a history entry; otherwise edits one in $FCEDIT and runs it. */
export const fc: Rule = (v, ctx) => {
  if (v.args.some((a) => /^-[a-zA-Z]*l/.test(a.text))) return;
  ctx.add('caution', v.args.some((a) => a.text === '-s') ? 're-runs a command from history (fc -s)' : 'edits and re-runs a command from history (fc)');
};

export const trap: Rule = (v, ctx) => {
  const pos = positionals(v.args);
  if (!pos.length || v.args.some((a) => /^-[lp]$/.test(a.text))) return;
  const code = pos[0]!.text;
  if (code !== '-' && code !== '') {
    ctx.add('caution', `sets a trap (${code})`);
    ctx.classifyCode(code, 'trap');
  }
};

export const BUILTIN_RULES: Record<string, Rule> = { alias, enable, hash, bind, complete, compgen: complete, mapfile, readarray: mapfile, fc, trap };

/** Shell builtins and keywords a function definition would shadow. */
export const SHELL_BUILTINS = new Set([
  'alias',
  'bg',
  'bind',
  'break',
  'builtin',
  'caller',
  'cd',
  'command',
  'compgen',
  'complete',
  'compopt',
  'continue',
  'declare',
  'dirs',
  'disown',
  'echo',
  'enable',
  'eval',
  'exec',
  'exit',
  'export',
  'false',
  'fc',
  'fg',
  'getopts',
  'hash',
  'help',
  'history',
  'jobs',
  'kill',
  'let',
  'local',
  'logout',
  'mapfile',
  'popd',
  'printf',
  'pushd',
  'pwd',
  'read',
  'readarray',
  'readonly',
  'return',
  'set',
  'shift',
  'shopt',
  'source',
  'suspend',
  'test',
  'times',
  'trap',
  'true',
  'type',
  'typeset',
  'ulimit',
  'umask',
  'unalias',
  'unset',
  'wait',
  '.',
  ':',
  '[',
]);
