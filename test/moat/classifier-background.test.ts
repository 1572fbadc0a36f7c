// Background and detaching constructs are at least caution (the process outlives the command
// line and nobody watches it), and the command they start is classified too.
import { describe, expect, it } from 'vitest';
import { classifyCommand, TIER_ORDER, type Tier } from '../../moat/command-classifier.js';

function below(cmds: string[], tier: Tier, exact = false): string[] {
  return cmds
    .map((c) => [c, classifyCommand(c)] as const)
    .filter(([, r]) => (exact ? r.tier !== tier : TIER_ORDER[r.tier] < TIER_ORDER[tier]))
    .map(([c, r]) => `${r.tier.padEnd(9)} ${c}\n          ${r.reasons.join(' | ')}`);
}

describe('background and detaching', () => {
  it('are caution', () => {
    expect(
      below(
        [
          '(setsid sleep 313 &)',
          'sleep 100 &',
          'ls & pwd',
          '(sleep 5 &)',
          '{ sleep 5; } &',
          'setsid sleep 313',
          'setsid -f sleep 1',
          'nohup sleep 100',
          'nohup sleep 100 > /dev/null 2>&1 &',
          'sleep 100 & disown',
          'sleep 100 & disown -h %1',
          'bg %1',
          'daemonize /usr/bin/sleep 100',
          'screen -d -m sleep 100',
          'screen -dmS job sleep 100',
          'tmux new -d sleep 100',
          'tmux new-session -d -s job "sleep 100"',
          'tmux run-shell -b "sleep 100"',
          'dtach -n /tmp/s sleep 100',
          'abduco -n job sleep 100',
          'systemd-run --user sleep 100',
          'systemd-run --on-active=60 touch x',
          'start-stop-daemon --start --background --exec /usr/bin/sleep -- 100',
          'echo "sleep 1" | at now + 1 minute',
          'at -f job.sh now',
          'echo "ls" | batch',
          'coproc sleep 1',
        ],
        'caution',
      ),
    ).toEqual([]);
  });

  it('classify what they start', () => {
    expect(
      below(
        [
          '(setsid rm -rf ~ &)',
          'rm -rf ~ &',
          'nohup rm -rf ~ &',
          'setsid bash -c "rm -rf ~"',
          'screen -dm rm -rf ~',
          'tmux new -d "rm -rf ~"',
          'daemonize /bin/rm -rf ~',
          'systemd-run rm -rf ~',
          'echo "rm -rf ~" | at now',
          'start-stop-daemon --start --exec /bin/rm -- -rf ~',
        ],
        'blocked',
      ),
    ).toEqual([]);
  });

  it('leaves job inspection safe', () => {
    expect(below(['jobs', 'wait', 'atq', 'at -l', 'fg %1'], 'safe', true)).toEqual([]);
  });
});
