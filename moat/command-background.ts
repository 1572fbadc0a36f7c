// Commands that start something which outlives the command line or runs detached from it:
// terminal multiplexers with a command, daemonizers, transient systemd units, job control. Each
// is at least caution (it keeps running after the tool call returns, unwatched) and the command
// it starts is classified too. `&`, nohup and setsid are handled by the classifier itself.
import { type Arg, litArg, positionals, type Rule, type RuleContext } from './command-args.js';
import { type OptionTable, scanOperands, scanOptions } from './command-options.js';

const detached = (ctx: RuleContext, what: string): void => ctx.add('caution', `starts a detached process that outlives the command (${what})`);

/** Runs `cmd` (words) as a command line: one word with spaces is shell code, several are an argv. */
function runWords(cmd: Arg[], label: string, ctx: RuleContext): void {
  if (!cmd.length) return;
  if (cmd.length === 1 && /\s/.test(cmd[0]!.text)) ctx.classifyCode(cmd[0]!.text, label);
  else ctx.runArgv(cmd, label);
}

const SCREEN: OptionTable = {
  argShort: 'cehpStTX',
  stopAtOperand: true,
  options: [
    { words: ['-Logfile'], kind: 'write', what: 'log file' },
    { short: 's', kind: 'program', what: 'shell' },
  ],
};

/** screen -dm / -dmS name cmd..., screen -X stuff 'cmd\n', screen -s shell. */
export const screen: Rule = (v, ctx) => {
  const a = v.args;
  const flags = a
    .filter((x) => /^-[A-Za-z]+$/.test(x.text))
    .map((x) => x.text.slice(1))
    .join('');
  for (const h of scanOptions(SCREEN, a)) {
    if (h.spec.kind === 'program' && h.value) {
      ctx.add('caution', `screen -s runs a shell program (${h.value})`);
      ctx.runArgv([litArg(h.value)], 'screen -s');
    }
  }
  const x = a.findIndex((w) => w.text === '-X');
  if (x >= 0) {
    const sub = a.slice(x + 1).map((w) => w.text);
    ctx.add('caution', `sends a command to a running screen session (screen -X ${sub.join(' ')})`);
    if (sub[0] === 'stuff' && sub[1]) ctx.classifyCode(sub[1].replace(/\\n|\^M|\r/g, '\n'), 'screen -X stuff');
    return;
  }
  const cmd = scanOperands(SCREEN, a);
  if (flags.includes('d') && flags.includes('m')) detached(ctx, 'screen -dm');
  else ctx.add('caution', 'controls terminal sessions (screen)');
  runWords(cmd, 'screen', ctx);
};

// tmux subcommands that take a shell command, their option letters that take a value, and
// whether they start it detached.
const TMUX_SHELL: Record<string, { argShort: string; detachFlag?: string }> = {
  'new-session': { argShort: 'cefFnstxyX', detachFlag: 'd' },
  new: { argShort: 'cefFnstxyX', detachFlag: 'd' },
  'new-window': { argShort: 'ceFnt', detachFlag: 'd' },
  neww: { argShort: 'ceFnt', detachFlag: 'd' },
  'split-window': { argShort: 'celpFt', detachFlag: 'd' },
  splitw: { argShort: 'celpFt', detachFlag: 'd' },
  'respawn-pane': { argShort: 'cet' },
  respawnp: { argShort: 'cet' },
  'respawn-window': { argShort: 'cet' },
  respawnw: { argShort: 'cet' },
  'run-shell': { argShort: 'cdt', detachFlag: 'b' },
  run: { argShort: 'cdt', detachFlag: 'b' },
  'pipe-pane': { argShort: 't' },
  pipep: { argShort: 't' },
  'display-popup': { argShort: 'bcdehsStTwxy' },
  popup: { argShort: 'bcdehsStTwxy' },
  'if-shell': { argShort: 't' },
  if: { argShort: 't' },
};

/** tmux [-L|-S|-f] subcommand ...[ \; subcommand ...]: commands started, typed (send-keys) or bound. */
export const tmux: Rule = (v, ctx) => {
  const a = v.args;
  let i = 0;
  while (i < a.length && a[i]!.text.startsWith('-')) {
    const t = a[i]!.text;
    if (t === '-c' && a[i + 1]) {
      ctx.add('caution', 'tmux -c runs a shell command');
      ctx.classifyCode(a[i + 1]!.text, 'tmux -c');
      return;
    }
    i += /^-[LSfT]$/.test(t) ? 2 : 1;
  }
  const rest = a.slice(i);
  const groups: Arg[][] = [[]];
  for (const w of rest) {
    if (w.text === ';' || w.text === '\\;') groups.push([]);
    else groups[groups.length - 1]!.push(w);
  }
  let reported = false;
  for (const g of groups) {
    const sub = g[0]?.text ?? '';
    const args = g.slice(1);
    const spec = TMUX_SHELL[sub];
    if (spec) {
      const flags = args
        .filter((x) => /^-[A-Za-z]+$/.test(x.text))
        .map((x) => x.text.slice(1))
        .join('');
      const cmd = positionals(args, spec.argShort);
      if (spec.detachFlag && flags.includes(spec.detachFlag)) detached(ctx, `tmux ${sub} -${spec.detachFlag}`);
      else ctx.add('caution', `tmux ${sub} runs a command in a session`);
      reported = true;
      if (sub === 'if-shell' || sub === 'if') runWords(cmd.slice(0, 1), `tmux ${sub}`, ctx);
      else runWords(cmd, `tmux ${sub}`, ctx);
    } else if (sub === 'send-keys' || sub === 'send') {
      const keys = positionals(args, 'Nt').map((x) => x.text);
      const text = keys.map((k) => (/^(?:Enter|C-m|KPEnter)$/.test(k) ? '\n' : k)).join(' ');
      ctx.add('caution', `types a command into a tmux session (tmux ${sub})`);
      reported = true;
      if (text.trim()) ctx.classifyCode(text, `tmux ${sub}`);
    } else if (/^(?:bind-key|bind|set-hook)$/.test(sub)) {
      ctx.add('caution', `tmux ${sub} binds commands to keys or events`);
      reported = true;
      const k = args.findIndex((x) => x.text === 'run-shell' || x.text === 'run');
      if (k >= 0 && args[k + 1]) ctx.classifyCode(args[args.length - 1]!.text, `tmux ${sub} run-shell`);
    }
  }
  if (!reported) ctx.add('caution', 'controls terminal sessions (tmux)');
};

/** daemonize [options] /path/to/prog args... */
export const daemonize: Rule = (v, ctx) => {
  const k = v.args.findIndex((x, i) => !x.text.startsWith('-') && !/^-[ceopluE]$/.test(v.args[i - 1]?.text ?? ''));
  detached(ctx, 'daemonize');
  if (k >= 0) ctx.runArgv(v.args.slice(k), 'daemonize');
};

/** dtach -n|-c|-A socket [options] cmd..., abduco -n|-c name cmd... */
export const dtach: Rule = (v, ctx) => {
  const a = v.args;
  const mode = a.findIndex((x) => /^-[ncAN]$/.test(x.text));
  if (mode < 0) {
    ctx.add('caution', `attaches to a detached session (${v.name})`);
    return;
  }
  detached(ctx, v.name);
  let k = mode + 2;
  while (k < a.length && a[k]!.text.startsWith('-')) k += /^-[er]$/.test(a[k]!.text) ? 2 : 1;
  runWords(a.slice(k), v.name, ctx);
};

const SYSTEMD_RUN_ARGS = [
  'unit',
  'property',
  'setenv',
  'host',
  'machine',
  'description',
  'slice',
  'uid',
  'gid',
  'nice',
  'working-directory',
  'on-active',
  'on-boot',
  'on-startup',
  'on-unit-active',
  'on-unit-inactive',
  'on-calendar',
  'on-clock-change',
  'on-timezone-change',
  'timer-property',
  'path-property',
  'socket-property',
  'service-type',
  'expand-environment',
  'background',
];

/** systemd-run [options] cmd...: a transient unit, detached unless --scope/--wait/--pty; timers persist. */
export const systemdRun: Rule = (v, ctx) => {
  const a = v.args;
  let i = 0;
  for (; i < a.length; i++) {
    const t = a[i]!.text;
    if (t === '--') {
      i++;
      break;
    }
    if (!t.startsWith('-')) break;
    if (/^-[upEHMs]$/.test(t) || (t.startsWith('--') && !t.includes('=') && SYSTEMD_RUN_ARGS.includes(t.slice(2)))) i++;
  }
  const words = a.map((x) => x.text);
  if (words.some((w) => /^--on-/.test(w))) ctx.add('caution', 'systemd-run schedules a command with a timer (it runs later, unattended)');
  if (!words.some((w) => /^(?:--scope|--wait|-t|--pty|-P|--pipe)$/.test(w))) detached(ctx, 'systemd-run');
  else ctx.add('caution', 'runs a command as a systemd unit');
  if (i < a.length) ctx.runArgv(a.slice(i), 'systemd-run');
};

/** start-stop-daemon --start --exec prog [--background] -- args... */
export const startStopDaemon: Rule = (v, ctx) => {
  const w = v.args.map((x) => x.text);
  if (!w.some((x) => x === '--start' || x === '-S')) {
    ctx.add('caution', `controls a daemon (${v.name} ${w.join(' ')})`);
    return;
  }
  detached(ctx, 'start-stop-daemon --start');
  const exec = v.args.findIndex((x) => /^(?:--exec|-x|--startas|-a)$/.test(x.text));
  const prog = exec >= 0 ? v.args[exec + 1] : undefined;
  const dd = w.indexOf('--');
  if (prog) ctx.runArgv([prog, ...(dd >= 0 ? v.args.slice(dd + 1) : [])], 'start-stop-daemon');
};

/** disown and bg: jobs keep running after the shell that started them is gone. */
export const disown: Rule = (v, ctx) => {
  ctx.add('caution', `detaches background jobs from the shell (${v.name})`);
};
