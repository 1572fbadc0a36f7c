// For text the parser rejects: patterns of the worst classes looked for in the raw text, and
// the suffix that closes what the parser complained about so the rest can still be analysed.
import type { Tier } from './command-tier.js';

/** Hard-block and dangerous patterns looked for in text that could not be parsed. */
export const RAW_PATTERNS: { re: RegExp; tier: Tier; reason: string }[] = [
  {
    re: /\brm\s+(?:[^;&|\n]*\s)?(?:-[a-zA-Z]*[rR][a-zA-Z]*|--recursive|--no-preserve-root)\b[^;&|\n]*?\s["']?(?:\/|\/\*|~\/?|\$\{?HOME\}?\/?|\/(?:etc|usr|var|boot|bin|sbin|lib|lib64|home|root|opt|srv|dev|sys|proc)\/?\*?)["']?(?=\s|$|[;&|)])/,
    tier: 'blocked',
    reason: 'rm -rf on / or a system/home directory',
  },
  { re: /\bmkfs(?:\.\w+)?\b|\bmke2fs\b|\bwipefs\s+(?:-\w*a|--all)/, tier: 'blocked', reason: 'formats or wipes a filesystem' },
  { re: /\bdd\b[^;&|\n]*\bof=\/dev\/(?:[shv]d[a-z]|xvd|nvme|mmcblk|r?disk)/, tier: 'blocked', reason: 'dd onto a block device' },
  { re: />\s*\/dev\/(?:[shv]d[a-z]|xvd[a-z]|nvme\d|mmcblk\d|r?disk\d)/, tier: 'blocked', reason: 'redirects output onto a block device' },
  { re: /:\s*\(\s*\)\s*\{[^}]*:\s*\|\s*:\s*&/, tier: 'blocked', reason: 'fork bomb' },
  { re: /\b(\w+)\s*\(\s*\)\s*\{[^}]*\b\1\s*\|\s*\1\s*&/, tier: 'blocked', reason: 'fork bomb' },
  { re: /(?:^|[;&|({`]\s*|\bsudo\s+)(?:shutdown|reboot|halt|poweroff)\b/, tier: 'blocked', reason: 'shuts down or reboots the machine' },
  { re: /\b(?:systemctl\s+(?:poweroff|reboot|halt|kexec)|(?:tel)?init\s+[06])\b/, tier: 'blocked', reason: 'shuts down or reboots the machine' },
  { re: /\bkill\s+(?:-9|-KILL|-SIGKILL|-s\s+KILL)\s+-1\b|\bkillall5\b/, tier: 'blocked', reason: 'kills every process' },
  { re: /\/proc\/sysrq-trigger|>\s*\/dev\/k?mem\b/, tier: 'blocked', reason: 'writes to kernel interfaces' },
  { re: /\bfind\s+\/\s[^;&|\n]*(?:-delete|-exec\s+rm)/, tier: 'blocked', reason: 'find / deletes everything' },
  { re: /\brm\s+(?:[^;&|\n]*\s)?-[a-zA-Z]*[rR]/, tier: 'dangerous', reason: 'recursive rm' },
  { re: /\b(?:curl|wget)\b[^;&\n]*\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b/, tier: 'dangerous', reason: 'pipes a download into a shell' },
  { re: /\bbase64\s+(?:-d|--decode|-D)\b[^;&\n]*\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b/, tier: 'dangerous', reason: 'pipes decoded data into a shell' },
  { re: /\bgit\s+(?:push\s+[^;&|\n]*(?:-f\b|--force)|reset\s+--hard|clean\s+-\w*f)/, tier: 'dangerous', reason: 'destructive git command' },
  { re: /\b(?:DROP\s+(?:TABLE|DATABASE|SCHEMA)|TRUNCATE\s+\w)/i, tier: 'dangerous', reason: 'destructive SQL' },
  { re: /\bchmod\s+-R\b|\bchown\s+-R\b/, tier: 'dangerous', reason: 'recursive permission change' },
  {
    re: /\b(?:ba|z|k|da)?sh\b[^\n]*\/dev\/(?:tcp|udp)\/|\/dev\/(?:tcp|udp)\/[^\n]*\b(?:ba|z|k|da)?sh\s+-i\b/,
    tier: 'dangerous',
    reason: 'a shell wired to /dev/tcp (reverse shell)',
  },
  {
    re: /\b(?:nc|ncat|netcat)\b[^;&|\n]*\s-[a-z]*[ec]\b|\bsocat\b[^\n]*\b(?:exec|system):/i,
    tier: 'dangerous',
    reason: 'a network tool running a shell (reverse shell)',
  },
  { re: /\bmkfifo\b[^\n]*\|\s*(?:\/bin\/)?(?:ba|z|da|k)?sh\b[^\n]*\|\s*(?:nc|ncat|netcat|telnet|socat)\b/, tier: 'dangerous', reason: 'fifo reverse shell' },
  { re: /\bcrontab\s+(?:-u\s+\S+\s+)?-(?:\s|$)/, tier: 'dangerous', reason: 'installs a crontab from standard input' },
  {
    re: /(?:\.ssh\/id_|\.aws\/credentials|\/etc\/shadow|\/proc\/[^/\s]+\/environ|\.env\b|--export-secret-keys)[^\n]*\b(?:curl|wget|nc|ncat|netcat|socat|scp|rsync|telnet)\b|\b(?:curl|wget)\b[^\n]*@(?:~|\$HOME)?\/?[^\s]*(?:\.ssh\/id_|\.aws\/credentials|\/etc\/shadow)/,
    tier: 'dangerous',
    reason: 'sends credential material to the network',
  },
  {
    re: /\bsysctl\b[^\n]*\bkernel[./](?:randomize_va_space\s*=\s*[01]|yama[./]ptrace_scope\s*=\s*0|kptr_restrict\s*=\s*0|dmesg_restrict\s*=\s*0)/,
    tier: 'dangerous',
    reason: 'switches off kernel hardening',
  },
  { re: /\bjournalctl\b[^\n]*--vacuum-/, tier: 'dangerous', reason: 'deletes system logs' },
  { re: /\bkill\s+(?:-\S+\s+)*(?:\$\(|`)/, tier: 'dangerous', reason: 'kills a computed list of processes' },
  { re: /\bssh\b[^\n]*\s-[A-Za-z]*R\s*\d|RemoteForward/, tier: 'dangerous', reason: 'ssh remote port forward' },
  { re: /\beval\b|\bbash\s+-c\b|\bsh\s+-c\b/, tier: 'caution', reason: 'runs dynamic code' },
];

export function rawScan(text: string, add: (tier: Tier, reason: string) => void): void {
  for (const p of RAW_PATTERNS) if (p.re.test(text)) add(p.tier, `unparsed text looks like: ${p.reason}`);
}

/** A suffix that closes what the parser complained about, so the rest can still be analysed. */
export function repairSuffix(msg: string): string | undefined {
  let m = /closing quote (.)/.exec(msg);
  if (m) return m[1];
  m = /matching (\S+) with (\S+)/.exec(msg);
  if (m) return m[1] === '{' ? '\n}' : m[1] === '[[' ? ' ]]' : m[2];
  m = /must end with "(\w+)"/.exec(msg);
  if (m) return `\n${m[1]}`;
  if (/must be followed by a statement/.test(msg)) return ' :';
  if (/must be followed by an expression/.test(msg)) return '0';
  return undefined;
}
