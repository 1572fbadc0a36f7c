// Reads outside the workspace (the shell's starting folder) are at least caution: absolute paths,
// `..` climbing out, `~`/$HOME, /proc, /sys, /dev, and cd out of the workspace. Reads inside it
// stay safe, and so do option values and patterns that merely look like paths.
import { describe, expect, it } from 'vitest';
import { classifyCommand, type Tier } from '../../moat/command-classifier.js';

function tiers(cmds: string[], want: Tier): string[] {
  return cmds
    .map((c) => [c, classifyCommand(c)] as const)
    .filter(([, r]) => r.tier !== want)
    .map(([c, r]) => `${r.tier.padEnd(9)} ${c}\n          ${r.reasons.join(' | ')}`);
}

describe('reads outside the workspace', () => {
  it('are caution: absolute, home, climbing, /proc, /sys, /dev', () => {
    expect(
      tiers(
        [
          'tr "\\0" "\\n" < /proc/$PPID/environ',
          'cat /proc/self/environ',
          'cat /proc/1/cmdline',
          'cat /etc/hostname',
          'cat /etc/passwd',
          'head -n 5 /var/log/syslog',
          'less /etc/ssh/sshd_config',
          'cat /sys/class/net/eth0/address',
          'xxd /dev/sda | head',
          'cat ~/.bash_profile',
          'cat $HOME/.profile',
          'cat "${HOME}/.gitconfig"',
          'cat ~alice/notes.txt',
          'cat ../secrets.txt',
          'cat ../../etc/passwd',
          'cat src/../../outside.txt',
          'wc -l < /etc/passwd',
          'grep root /etc/passwd',
          'grep -e root /etc/passwd',
          'grep -f /etc/patterns.txt notes.txt',
          'awk -f /tmp/prog.awk data.txt',
          'sed -f /tmp/script.sed data.txt',
          "sed -n '1p' /etc/passwd",
          'jq . /etc/config.json',
          'jq --slurpfile x /etc/x.json . data.json',
          'diff /etc/hosts hosts',
          'cmp /bin/ls ls',
          'sha256sum /usr/bin/node',
          'stat /etc/shadow',
          'ls /',
          'ls -la ~',
          'tree /etc',
          'du -sh /var',
          'find / -name "*.pem"',
          'find . -newer /etc/passwd',
          'file /bin/bash',
          'strings /usr/bin/sudo | head',
          'od -c /dev/mem | head',
          'base64 /etc/passwd',
          'zcat /var/log/syslog.2.gz',
          'tar -tf /var/backups/etc.tar',
          'tar -czf out.tgz /etc',
          'dd if=/etc/passwd of=copy.txt',
          'xargs -a /etc/passwd echo',
          'git -C /etc status',
          'git --git-dir=/srv/repo.git log',
          'cd / && ls',
          'cd .. && cat notes.txt',
          'cd',
          'cd ~ && ls',
          'pushd /var/log',
          'env -C /etc cat passwd',
          'curl file:///etc/passwd',
          'cat ~/.ssh/id_rsa.pub',
        ],
        'caution',
      ),
    ).toEqual([]);
  });

  it('stay safe inside the workspace', () => {
    expect(
      tiers(
        [
          'cat notes.txt',
          'ls -la src',
          'grep -rn foo .',
          'wc -l *.md',
          'cat ./src/index.ts',
          'cat src/../README.md',
          'cd src && cat ../README.md',
          'cd src && ls && cd .. && ls',
          '(cd src && ls) && ls',
          'head -n 20 docs/intro.md',
          'grep -r "/etc/passwd" src/',
          "grep -e '/usr/bin' notes.txt",
          "sed -n '/start/,/end/p' log.txt",
          "awk '/^\\/usr/ { print }' paths.txt",
          "awk -F/ '{ print $2 }' paths.txt",
          'cut -d/ -f2 paths.txt',
          "tr '/' '_' < paths.txt",
          'sort -t/ -k2 paths.txt',
          'column -s / -t paths.txt',
          'jq ".path" data.json',
          'basename /usr/local/bin/node',
          'dirname /usr/local/bin/node',
          'echo /etc/passwd',
          'ls 2>/dev/null',
          'cat file 2>&1 >/dev/null',
          'head -c 16 /dev/urandom | xxd',
          'cat < /dev/null',
          'cat "$PWD/notes.txt"',
          'for f in *.txt; do wc -l "$f"; done',
          'df -h /',
          'which node',
          'test -f /etc/os-release && echo yes',
          'man ls',
        ],
        'safe',
      ),
    ).toEqual([]);
  });
});

describe('option values that are files read', () => {
  it('count, and globs in the workspace are not mistaken for the filesystem root', () => {
    expect(tiers(['touch -r /etc/passwd notes.txt'], 'caution')).toEqual([]);
    const tar = classifyCommand('tar -czf backup.tgz *');
    expect(tar.tier).toBe('caution');
    expect(tar.reasons.join(' ')).not.toMatch(/credential/);
  });
});
