// Options and variables that name a program to run or a file to write, spelled every way the
// tools' manuals allow. A payload of `rm -rf ~` proves the value is classified as a command (the
// result is blocked); a write to /etc/passwd proves it is seen as a write (dangerous).
import { describe, expect, it } from 'vitest';
import { classifyCommand, TIER_ORDER, type Tier } from '../../moat/command-classifier.js';

type Row = [command: string, tier: Tier, reason?: RegExp];

function check(rows: Row[], exact = false): string[] {
  const bad: string[] = [];
  for (const [cmd, tier, reason] of rows) {
    const r = classifyCommand(cmd);
    const tierOk = exact ? r.tier === tier : TIER_ORDER[r.tier] >= TIER_ORDER[tier];
    const reasonOk = !reason || r.reasons.some((x) => reason.test(x));
    if (!tierOk || !reasonOk) bad.push(`${r.tier.padEnd(9)} ${cmd}\n          ${r.reasons.join(' | ')}`);
  }
  return bad;
}

const RM = `'rm -rf ~'`;

describe('options that name a program to run', () => {
  it('tar (GNU tar manual): --checkpoint-action=exec, --to-command, -I/--use-compress-program, --rsh-command, --rmt-command, -F/--info-script', () => {
    expect(
      check([
        [`tar -cf a.tar src --checkpoint=1 --checkpoint-action=exec=${RM}`, 'blocked'],
        [`tar cf a.tar --checkpoint-action="exec=rm -rf ~" src`, 'blocked'],
        [`tar -xf a.tar --to-command=${RM}`, 'blocked'],
        [`tar -xf a.tar --to-command ${RM}`, 'blocked'],
        [`tar -x --to-com=${RM} -f a.tar`, 'blocked'],
        [`tar -xI ${RM} -f a.tar`, 'blocked'],
        [`tar -I${RM} -xf a.tar`, 'blocked'],
        [`tar xIf ${RM} a.tar`, 'blocked'],
        [`tar --use-compress-program=${RM} -xf a.tar`, 'blocked'],
        [`tar --use-compress-program ${RM} -xf a.tar`, 'blocked'],
        [`tar -cf host:/dev/tape --rsh-command=${RM} src`, 'blocked'],
        [`tar -xf a.tar --rmt-command=${RM}`, 'blocked'],
        [`tar -cML 1024 -F ${RM} -f a.tar src`, 'blocked'],
        [`tar -c --info-script=${RM} -f a.tar src`, 'blocked'],
        [`tar -c --new-volume-script=${RM} -f a.tar src`, 'blocked'],
        [`tar -cf a.tar --index-file=/etc/passwd src`, 'dangerous', /index-file writes to system path/],
        [`tar -cg /etc/passwd -f a.tar src`, 'dangerous', /writes to system path/],
        ["TAR_OPTIONS='--to-command=rm\\ -rf\\ ~' tar -xf a.tar", 'blocked'],
      ]),
    ).toEqual([]);
  });

  it('rsync: -e/--rsh, --rsync-path, --log-file, --write-batch; RSYNC_RSH', () => {
    expect(
      check([
        [`rsync -e ${RM} src/ host:dst/`, 'blocked'],
        [`rsync -ae ${RM} src/ host:dst/`, 'blocked'],
        [`rsync --rsh=${RM} src/ host:dst/`, 'blocked'],
        [`rsync --rsh ${RM} src/ host:dst/`, 'blocked'],
        [`rsync -e 'ssh -o ProxyCommand="rm -rf ~"' src/ host:dst/`, 'blocked'],
        [`rsync --rsync-path='sudo rsync' src/ host:dst/`, 'caution', /remote rsync program/],
        [`rsync --log-file=/etc/passwd src/ dst/`, 'dangerous', /log-file writes to system path/],
        [`rsync --write-batch=/etc/passwd src/ dst/`, 'dangerous'],
        [`RSYNC_RSH=${RM} rsync src/ host:dst/`, 'blocked'],
      ]),
    ).toEqual([]);
  });

  it('find: -exec, -execdir, -ok, -okdir run commands; -fprint, -fprint0, -fprintf, -fls write; -delete deletes', () => {
    expect(
      check([
        [`find . -exec rm -rf ~ \\;`, 'blocked'],
        [`find . -execdir rm -rf ~ +`, 'blocked'],
        [`find . -ok rm -rf ~ \\;`, 'blocked'],
        [`find . -okdir rm -rf ~ \\;`, 'blocked'],
        [`find . -fprint /etc/passwd`, 'dangerous', /-fprint writes to system path/],
        [`find . -fprint0 /etc/passwd`, 'dangerous'],
        [`find . -fprintf /etc/passwd '%p'`, 'dangerous'],
        [`find . -fls /etc/passwd`, 'dangerous'],
        [`find . -name '*.o' -delete`, 'dangerous'],
      ]),
    ).toEqual([]);
  });

  it('sort: -o/--output writes, --compress-program runs', () => {
    expect(
      check([
        ['sort -o /etc/passwd names.txt', 'dangerous', /sort -o writes to system path/],
        ['sort -no/etc/passwd names.txt', 'dangerous'],
        ['sort --output=/etc/passwd names.txt', 'dangerous'],
        ['sort --output /etc/passwd names.txt', 'dangerous'],
        ['sort --out=/etc/passwd names.txt', 'dangerous'],
        [`sort --compress-program=${RM} big.txt`, 'blocked'],
        [`sort --compress-program ${RM} big.txt`, 'blocked'],
        ['sort -t/ -k2 paths.txt', 'safe'],
      ]),
    ).toEqual([]);
  });

  it('zip: -TT/--unzip-command run the test command; -O/--output-file write', () => {
    expect(
      check([
        [`zip -T -TT ${RM} a.zip file.txt`, 'blocked'],
        [`zip a.zip file.txt -T --unzip-command ${RM}`, 'blocked'],
        [`zip a.zip file.txt -T --unzip-command=${RM}`, 'blocked'],
        ['zip -O /etc/passwd a.zip file.txt', 'dangerous'],
      ]),
    ).toEqual([]);
  });

  it('awk: system(), pipes to and from commands, print > file', () => {
    expect(
      check([
        [`awk 'BEGIN { system("rm -rf ~") }'`, 'blocked'],
        [`awk '{ print | "rm -rf ~" }' f`, 'blocked'],
        [`awk 'BEGIN { "rm -rf ~" | getline x }'`, 'blocked'],
        [`awk '{ print > "/etc/passwd" }' f`, 'dangerous'],
        [`awk '{ print $1 }' f`, 'safe'],
      ]),
    ).toEqual([]);
  });

  it('sed: the e command and s///e run commands, w writes, -i edits in place', () => {
    expect(
      check([
        [`sed 'e rm -rf ~' f`, 'blocked'],
        [`sed 's/x/y/e' f`, 'dangerous'],
        [`sed 'w /etc/passwd' f`, 'dangerous'],
        [`sed -n 's/x/y/w /etc/passwd' f`, 'dangerous'],
        [`sed -i 's/a/b/' /etc/hosts`, 'dangerous'],
        [`sed -n '/start/,/end/p' log`, 'safe'],
      ]),
    ).toEqual([]);
  });

  it('wrappers that run a program: env, nice, timeout, nohup, strace, ltrace, watch, flock, stdbuf, taskset, ionice, chroot, xargs', () => {
    expect(
      check([
        ['env rm -rf ~', 'blocked'],
        ['env -i PATH=/bin rm -rf ~', 'blocked'],
        ['nice -n 10 rm -rf ~', 'blocked'],
        ['timeout 5 rm -rf ~', 'blocked'],
        ['nohup rm -rf ~', 'blocked'],
        ['strace -f -o trace.txt rm -rf ~', 'blocked'],
        ['ltrace -o trace.txt rm -rf ~', 'blocked'],
        ['watch -n 1 rm -rf ~', 'blocked'],
        ['flock /tmp/lock rm -rf ~', 'blocked'],
        ['flock /tmp/lock -c "rm -rf ~"', 'blocked'],
        ['stdbuf -oL rm -rf ~', 'blocked'],
        ['taskset 0x1 rm -rf ~', 'blocked'],
        ['ionice -c3 rm -rf ~', 'blocked'],
        ['sudo chroot /srv/jail rm -rf ~', 'blocked'],
        ['echo ~ | xargs rm -rf', 'dangerous'],
        ['strace -o /etc/passwd ls', 'dangerous', /strace -o writes to system path/],
        ['ltrace -o /etc/passwd ls', 'dangerous'],
        ['strace -p 1234', 'caution', /process to attach to/],
        ['strace -E LD_PRELOAD=/tmp/x.so ls', 'caution', /injects shared libraries/],
      ]),
    ).toEqual([]);
  });

  it('tee, dd of=, curl -o/-O/--output/-K, wget -O/-o/--execute', () => {
    expect(
      check([
        ['echo x | tee /etc/passwd', 'dangerous'],
        ['echo x | tee -a ~/.bashrc', 'dangerous'],
        ['dd if=/dev/zero of=/etc/passwd', 'dangerous'],
        ['curl -o /etc/passwd https://example.com', 'dangerous', /curl -o writes to system path/],
        ['curl -so/etc/passwd https://example.com', 'dangerous'],
        ['curl --output /etc/passwd https://example.com', 'dangerous'],
        ['curl --output=/etc/passwd https://example.com', 'dangerous'],
        ['curl --output-dir /etc -O https://example.com/passwd', 'dangerous'],
        ['curl -D /etc/passwd https://example.com', 'dangerous', /-D writes to system path/],
        ['curl -c ~/.bashrc https://example.com', 'dangerous'],
        ['curl --trace /etc/passwd https://example.com', 'dangerous'],
        ['curl -K conf.txt https://example.com', 'caution', /curl -K loads a config file/],
        ['curl --config conf.txt', 'caution', /config file/],
        ['curl --unix-socket /var/run/docker.sock http://localhost/containers/json', 'dangerous', /container runtime socket/],
        ['wget -O /etc/passwd https://example.com', 'dangerous'],
        ['wget -qO/etc/passwd https://example.com', 'dangerous'],
        ['wget --output-document=/etc/passwd https://example.com', 'dangerous'],
        ['wget -o /etc/passwd https://example.com', 'dangerous', /wget -o writes/],
        ['wget --output-file /etc/passwd https://example.com', 'dangerous'],
        ['wget -e robots=off https://example.com', 'caution', /wgetrc command/],
        ['wget --execute=use_proxy=on https://example.com', 'caution', /wgetrc command/],
        [`wget --use-askpass=${RM} https://example.com`, 'blocked'],
      ]),
    ).toEqual([]);
  });

  it('ssh -o ProxyCommand/LocalCommand/KnownHostsCommand/PKCS11Provider, -F, -I, -E; scp -S, -o; sftp -S, -D, -b', () => {
    expect(
      check([
        [`ssh -o ProxyCommand=${RM} host`, 'blocked'],
        [`ssh -o 'ProxyCommand rm -rf ~' host`, 'blocked'],
        [`ssh -oProxyCommand=${RM} host`, 'blocked'],
        [`ssh -o proxycommand=${RM} host`, 'blocked'],
        [`ssh -o PermitLocalCommand=yes -o LocalCommand=${RM} host`, 'blocked'],
        [`ssh -o KnownHostsCommand=${RM} host`, 'blocked'],
        ['ssh -o PKCS11Provider=/tmp/x.so host', 'caution', /PKCS#11 provider/],
        ['ssh -I /tmp/x.so host', 'caution', /PKCS#11 provider/],
        ['ssh -F ./evil_config host', 'caution', /ssh config/],
        ['ssh -E /etc/passwd host', 'dangerous'],
        ['ssh -o StrictHostKeyChecking=no host', 'caution', /host key checking/],
        ['ssh -A host', 'caution', /agent forwarding/],
        [`scp -S ${RM} file host:`, 'blocked'],
        [`scp -o ProxyCommand=${RM} file host:`, 'blocked'],
        [`sftp -S ${RM} host`, 'blocked'],
        [`sftp -D ${RM} host`, 'blocked'],
        ['sftp -b batch.txt host', 'caution', /batch file/],
      ]),
    ).toEqual([]);
  });

  it('git: -c core.pager/core.sshCommand/core.fsmonitor/diff.external/..., --upload-pack, --receive-pack, --exec, rebase --exec, GIT_* variables', () => {
    expect(
      check([
        [`git -c core.pager=${RM} log`, 'blocked'],
        [`git -c core.sshCommand=${RM} fetch`, 'blocked'],
        [`git -c core.sshcommand=${RM} fetch`, 'blocked'],
        [`git -c core.fsmonitor=${RM} status`, 'blocked'],
        [`git -c diff.external=${RM} diff`, 'blocked'],
        [`git -c diff.x.textconv=${RM} diff`, 'blocked'],
        [`git -c filter.x.smudge=${RM} checkout .`, 'blocked'],
        [`git -c credential.helper='!rm -rf ~' fetch`, 'blocked'],
        [`git -c alias.x='!rm -rf ~' x`, 'blocked'],
        [`git -c core.editor=${RM} commit`, 'blocked'],
        [`git -c gpg.program=${RM} commit -S`, 'blocked'],
        [`git -c uploadpack.packObjectsHook=${RM} fetch`, 'blocked'],
        ['git -c core.hooksPath=/tmp/hooks commit -m x', 'caution', /hooks folder/],
        ['git -c protocol.ext.allow=always fetch', 'caution', /ext::/],
        ['git -c include.path=/tmp/evil.cfg log', 'caution', /included config/],
        [`git clone --upload-pack=${RM} repo`, 'blocked'],
        [`git clone -u ${RM} repo`, 'blocked'],
        [`git clone --config core.fsmonitor=${RM} https://example.com/r.git`, 'blocked'],
        [`git clone -c core.sshCommand=${RM} https://example.com/r.git`, 'blocked'],
        [`git fetch --upload-pack=${RM} origin`, 'blocked'],
        [`git ls-remote --upload-pack ${RM} origin`, 'blocked'],
        [`git push --receive-pack=${RM} origin`, 'blocked'],
        [`git push --exec=${RM} origin`, 'blocked'],
        [`git archive --exec=${RM} --remote=origin HEAD`, 'blocked'],
        ['git archive -o /etc/passwd HEAD', 'dangerous'],
        [`git rebase --exec ${RM} main`, 'blocked'],
        [`git rebase -x ${RM} main`, 'blocked'],
        [`git difftool -x ${RM}`, 'blocked'],
        ['git bisect run rm -rf ~', 'blocked'],
        [`git submodule foreach ${RM}`, 'blocked'],
        [`git grep -O${RM} foo`, 'blocked'],
        [`git config core.pager ${RM}`, 'blocked'],
        [`git config --global core.sshCommand ${RM}`, 'blocked'],
        ['git log --output=/etc/passwd', 'dangerous'],
        ["git clone 'ext::sh -c rm% -rf% ~' repo", 'caution', /ext::/],
        [`GIT_EXTERNAL_DIFF=${RM} git diff`, 'blocked'],
        [`GIT_PAGER=${RM} git log`, 'blocked'],
        [`GIT_SSH_COMMAND=${RM} git fetch`, 'blocked'],
        [`GIT_SSH=${RM} git fetch`, 'blocked'],
        [`GIT_EDITOR=${RM} git commit`, 'blocked'],
        [`GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=${RM} git log`, 'blocked'],
        [`GIT_CONFIG_PARAMETERS="'core.pager'='rm -rf ~'" git log`, 'blocked'],
        ['GIT_EXEC_PATH=/tmp/evil git status', 'caution', /GIT_EXEC_PATH/],
        ['git --exec-path=/tmp/evil status', 'caution', /exec-path/],
        ['git --exec-path', 'safe'],
        ['git log --oneline', 'safe'],
        ['git -c color.ui=always log', 'caution', /overrides git config/],
      ]),
    ).toEqual([]);
  });

  it('pagers, editors and viewers: PAGER, MANPAGER, EDITOR, VISUAL, LESSOPEN, man -P/-H, less +!cmd, -o', () => {
    expect(
      check([
        [`PAGER=${RM} man ls`, 'blocked'],
        [`MANPAGER=${RM} man ls`, 'blocked'],
        [`EDITOR=${RM} crontab -e`, 'blocked'],
        [`VISUAL=${RM} git commit`, 'blocked'],
        [`LESSOPEN='|rm -rf ~ %s' less f`, 'blocked'],
        [`LESSOPEN='||rm -rf ~ %s' less f`, 'blocked'],
        [`LESSCLOSE=${RM} less f`, 'blocked'],
        [`man -P ${RM} ls`, 'blocked'],
        [`man --pager=${RM} ls`, 'blocked'],
        [`man -H${RM} ls`, 'blocked'],
        [`man --html=${RM} ls`, 'blocked'],
        ['man -C ./evil.conf ls', 'caution', /config file/],
        [`less '+!rm -rf ~' f`, 'blocked'],
        [`less '+|arm -rf ~' f`, 'blocked'],
        ['less -o /etc/passwd f', 'dangerous'],
        ['less --log-file=/etc/passwd f', 'dangerous'],
        ['less -k ./keys f', 'caution', /key bindings/],
        [`MANOPT="-P 'rm -rf ~'" man ls`, 'blocked'],
        [`sdiff --diff-program=${RM} a b`, 'blocked'],
        [`diff3 --diff-program=${RM} a b c`, 'blocked'],
        ['sdiff -o /etc/passwd a b', 'dangerous'],
        [`bat --pager=${RM} f`, 'blocked'],
        [`fzf --preview=${RM}`, 'blocked'],
        [`fzf --bind 'ctrl-x:execute(rm -rf ~)'`, 'blocked'],
        [`rg --pre ${RM} foo`, 'blocked'],
        ['less README.md', 'safe'],
        ['man ls', 'safe'],
      ]),
    ).toEqual([]);
  });

  it('make -f/--file/--eval and SHELL=; vim -c/+cmd/--cmd with :!, :terminal, system(); emacs --eval; nano --speller; gdb -ex shell', () => {
    expect(
      check([
        ['make -f /tmp/evil.mk', 'caution', /makefile/],
        ['make --file=/tmp/evil.mk', 'caution', /makefile/],
        ['make --eval="all: ; rm -rf ~"', 'caution', /makefile text/],
        [`make SHELL=${RM}`, 'caution', /runs a build/],
        [`vim -c ':!rm -rf ~' f`, 'blocked'],
        [`vim -c '!rm -rf ~' f`, 'blocked'],
        [`vim '+!rm -rf ~' f`, 'blocked'],
        [`vim --cmd 'silent !rm -rf ~'`, 'blocked'],
        [`vim -c 'r !rm -rf ~'`, 'blocked'],
        [`vim -c ':terminal rm -rf ~'`, 'blocked'],
        [`vim -c 'call system("rm -rf ~")'`, 'blocked'],
        [`vim -c 'py3 import os; os.system("rm -rf ~")'`, 'blocked'],
        [`nvim --headless -c '!rm -rf ~' -c q`, 'blocked'],
        [`ex -c '!rm -rf ~' f`, 'blocked'],
        ['vim -c "w /etc/passwd" f', 'dangerous'],
        ['vim -S ./evil.vim', 'caution', /editor script/],
        [`VIMINIT=':!rm -rf ~' vim f`, 'blocked'],
        ['emacs --batch --eval "(shell-command \\"id\\")"', 'caution', /lisp expression/],
        [`nano --speller=${RM} f`, 'blocked'],
        [`nano -s ${RM} f`, 'blocked'],
        [`gdb -ex 'shell rm -rf ~' -batch`, 'blocked'],
        [`gdb -ex '!rm -rf ~'`, 'blocked'],
        [`gdb --eval-command='shell rm -rf ~'`, 'blocked'],
        [`gdb -batch -ex 'python import os; os.system("rm -rf ~")'`, 'blocked'],
        ['gdb -p 1234', 'caution', /process to attach to/],
      ]),
    ).toEqual([]);
  });

  it('interpreters, tcpdump -z, script -c, apt -o Pre-Invoke, mysql --pager, npx -c, su -s, screen/tmux commands', () => {
    expect(
      check([
        ['python3 -c "import os; os.system(\'rm -rf ~\')"', 'blocked'],
        ['perl -e "system(\'rm -rf ~\')"', 'blocked'],
        ["node -e \"require('child_process').execSync('rm -rf ~')\"", 'blocked'],
        ['node -r ./hook.js app.js', 'caution', /preloaded module/],
        ['NODE_OPTIONS="--require ./hook.js" node app.js', 'caution', /NODE_OPTIONS/],
        [`tcpdump -i eth0 -w cap.pcap -G 60 -z ${RM}`, 'blocked'],
        ['tcpdump -w /etc/passwd', 'dangerous'],
        [`script -c ${RM} /dev/null`, 'blocked'],
        [`script -qc ${RM} log.txt`, 'blocked'],
        [`apt-get update -o APT::Update::Pre-Invoke::=${RM}`, 'blocked'],
        [`apt-get -o 'DPkg::Post-Invoke::=rm -rf ~' install x`, 'blocked'],
        [`mysql --pager=${RM} db`, 'blocked'],
        [`npx -c ${RM}`, 'blocked'],
        [`su -s ${RM} nobody`, 'blocked'],
        [`screen -dmS x rm -rf ~`, 'blocked'],
        [`tmux new -d ${RM}`, 'blocked'],
        [`tmux new-session -d -s x ${RM}`, 'blocked'],
        [`tmux send-keys -t x ${RM} Enter`, 'blocked'],
        [`pandoc -F ${RM} in.md`, 'blocked'],
        [`gpg --photo-viewer ${RM} --list-keys`, 'blocked'],
      ]),
    ).toEqual([]);
  });
});

describe('builtins and variables that change what a name runs', () => {
  it('alias, enable, hash -p, functions that shadow commands, command/builtin, PATH and loader variables', () => {
    expect(
      check([
        ['alias ls="rm -rf ~"', 'blocked'],
        ['alias ll="ls -la"', 'caution', /defines an alias/],
        ['enable -n echo', 'caution', /disables builtins/],
        ['enable -f ./x.so evil', 'caution', /shared library/],
        ['hash -p /tmp/evil ls', 'caution', /hash -p makes ls run/],
        ['ls() { echo hi; }; ls', 'caution', /shadows the command 'ls'/],
        ['function cd { builtin cd "$@"; echo x; }', 'caution', /shadows the command 'cd'/],
        ['sudo() { echo; }', 'caution', /shadows/],
        ['command rm -rf ~', 'blocked'],
        ['builtin eval "rm -rf ~"', 'blocked'],
        ['PATH=/tmp/evil:$PATH ls', 'caution', /changes PATH/],
        ['export PATH=.:$PATH', 'caution', /changes PATH/],
        ['declare -x PATH=/tmp', 'caution', /changes PATH/],
        ['BASH_ENV=./evil.sh bash -c true', 'caution', /BASH_ENV/],
        ['ENV=./evil.sh sh -c true', 'caution', /ENV, a script/],
        [`PROMPT_COMMAND=${RM} bash -i`, 'blocked'],
        ["PS4='$(rm -rf ~)' bash -x script.sh", 'blocked'],
        ['LD_PRELOAD=/tmp/x.so ls', 'caution', /injects shared libraries/],
        ['LD_LIBRARY_PATH=/tmp ls', 'caution', /injects shared libraries/],
        ['DYLD_INSERT_LIBRARIES=/tmp/x.dylib ls', 'caution', /injects shared libraries/],
        ['PYTHONPATH=/tmp python3 app.py', 'caution', /PYTHONPATH/],
        ['PYTHONSTARTUP=./evil.py python3', 'caution', /PYTHONSTARTUP/],
        ['KUBECONFIG=./kc kubectl get pods', 'caution', /KUBECONFIG/],
        ['SSLKEYLOGFILE=/tmp/keys curl https://x', 'caution', /SSLKEYLOGFILE/],
        ['HOME=/tmp/h git log', 'caution', /HOME/],
        ['export -f myfunc', 'caution', /exports shell functions/],
        [`bind -x '"\\C-t": rm -rf ~'`, 'blocked'],
        [`complete -C ${RM} ls`, 'blocked'],
        [`mapfile -C ${RM} arr < f`, 'blocked'],
        ['fc -s', 'caution', /re-runs/],
        ['fc -l', 'safe'],
        ['hash', 'safe'],
        ['enable -a', 'safe'],
        ['alias', 'safe'],
        ['FOO=1 env', 'safe'],
      ]),
    ).toEqual([]);
  });
});

describe('spellings that once slipped through', () => {
  it('are recognised', () => {
    expect(
      check([
        [`vim -es -c ':call system("rm -rf ~")' -c q`, 'blocked'],
        [`awk 'BEGIN{cmd="rm -rf ~"; system(cmd)}'`, 'blocked'],
        [`awk 'BEGIN{c="rm -rf ~"; while ((c | getline l) > 0) print l}'`, 'blocked'],
        ['flock -n /tmp/l rm -rf ~', 'blocked'],
        ['wget --execute="output_document=/etc/passwd" https://x.example', 'dangerous'],
        [`make SHELL=${RM}`, 'blocked'],
        [`tar --create --file=a.tar --use-compress-prog=${RM} src`, 'blocked'],
        [`tar -cvzf a.tgz --checkpoint-action exec=${RM} src`, 'blocked'],
        [`sudo GIT_SSH_COMMAND=${RM} git fetch`, 'blocked'],
        [`export GIT_PAGER=${RM}; git log`, 'blocked'],
        [`man -P"rm -rf ~" ls`, 'blocked'],
        [`ssh -o"ProxyCommand=rm -rf ~" host`, 'blocked'],
        [`vim +'!rm -rf ~'`, 'blocked'],
        ['watch -x rm -rf ~', 'blocked'],
        ['timeout -s KILL 5 rm -rf ~', 'blocked'],
      ]),
    ).toEqual([]);
  });
});

describe('database clients that run commands or write files', () => {
  it('are recognised', () => {
    expect(
      check([
        [`sqlite3 app.db '.once |rm -rf ~'`, 'blocked'],
        [`sqlite3 app.db '.output /etc/passwd'`, 'dangerous'],
        [`psql -c "COPY t TO PROGRAM 'rm -rf ~'"`, 'blocked'],
        [`psql <<< '\\o |rm -rf ~'`, 'blocked'],
        [`psql -c '\\! rm -rf ~'`, 'blocked'],
        ['psql -o /etc/passwd -c "select 1"', 'dangerous'],
        [`mysql -e 'system rm -rf ~'`, 'blocked'],
        ['sqlite3 app.db "select 1"', 'caution'],
      ]),
    ).toEqual([]);
  });
});
