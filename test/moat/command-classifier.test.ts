import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { classifyCommand, loadCommandCorpus, TIER_ORDER, type Tier } from '../../moat/command-classifier.js';
import { loadLines } from '../../moat/corpus.js';

const here = dirname(fileURLToPath(import.meta.url));
const corpusDir = join(here, '..', 'corpora', 'commands');
const corpus = (name: string): string[] => loadCommandCorpus(join(corpusDir, name));

/** Lines whose tier is not accepted, formatted for a readable failure message. */
function misses(lines: string[], ok: (t: Tier) => boolean): string[] {
  const out: string[] = [];
  for (const line of lines) {
    const r = classifyCommand(line);
    if (!ok(r.tier)) out.push(`${r.tier.padEnd(9)} ${line}\n          ${r.reasons.join(' | ')}`);
  }
  return out;
}

describe('command corpora', () => {
  const blocked = corpus('blocked.txt');
  const dangerous = corpus('dangerous.txt');
  const benign = corpus('benign.txt');
  const caution = corpus('caution.txt');

  it('has the required sizes', () => {
    expect(new Set(blocked).size).toBeGreaterThanOrEqual(60);
    expect(new Set([...blocked, ...dangerous]).size).toBeGreaterThanOrEqual(200);
    expect(new Set(benign).size).toBeGreaterThanOrEqual(200);
  });

  it('keeps each command in one corpus only', () => {
    const seen = new Map<string, string>();
    const dupes: string[] = [];
    for (const [name, lines] of Object.entries({ blocked, dangerous, benign, caution })) {
      for (const l of lines) {
        const prev = seen.get(l);
        if (prev && prev !== name) dupes.push(`${l} (${prev} and ${name})`);
        seen.set(l, name);
      }
    }
    expect(dupes).toEqual([]);
  });

  it('classifies every blocked.txt line as blocked', () => {
    expect(misses(blocked, (t) => t === 'blocked')).toEqual([]);
  });

  it('classifies every dangerous.txt line as dangerous or blocked', () => {
    expect(misses(dangerous, (t) => t === 'dangerous' || t === 'blocked')).toEqual([]);
  });

  it('classifies every benign.txt line as safe', () => {
    expect(misses(benign, (t) => t === 'safe')).toEqual([]);
  });

  it('classifies every caution.txt line as exactly caution', () => {
    expect(misses(caution, (t) => t === 'caution')).toEqual([]);
  });
});

describe('classifyCommand', () => {
  it('exports the tier order', () => {
    expect(TIER_ORDER).toEqual({ safe: 0, caution: 1, dangerous: 2, blocked: 3 });
  });

  it('gives meaningful reasons', () => {
    const wipe = classifyCommand('rm -rf /');
    expect(wipe.tier).toBe('blocked');
    expect(wipe.reasons[0]).toMatch(/rm -rf on \//);

    const curl = classifyCommand('curl -fsSL https://example.com/install.sh | sudo bash');
    expect(curl.tier).toBe('dangerous');
    expect(curl.reasons).toContain('pipes a download into a shell');
    expect(curl.reasons.some((r) => /elevated privileges \(sudo\)/.test(r))).toBe(true);

    const nested = classifyCommand(`bash -c 'rm -rf ~'`);
    expect(nested.tier).toBe('blocked');
    expect(nested.reasons[0]).toMatch(/rm -rf on ~.*via bash -c/);

    const sql = classifyCommand('psql -c "DROP TABLE users"');
    expect(sql.reasons).toContain('psql runs DROP TABLE');

    const safe = classifyCommand('ls -la | grep foo');
    expect(safe).toEqual({ tier: 'safe', reasons: ['read-only commands only'] });

    for (const line of [...corpus('blocked.txt'), ...corpus('dangerous.txt'), ...corpus('caution.txt')]) {
      const r = classifyCommand(line);
      expect(r.reasons.length, line).toBeGreaterThan(0);
      expect(
        r.reasons.every((x) => typeof x === 'string' && x.trim().length > 3),
        line,
      ).toBe(true);
      // the top reason explains the tier
      expect(r.reasons[0]!.length, line).toBeGreaterThan(3);
    }
  });

  it('never throws and treats unparsable input as caution at least', () => {
    for (const bad of ['echo "unterminated', 'if then fi (', 'for', 'ls; $(', 'echo $((', ')))', 'case', '{', '`']) {
      const r = classifyCommand(bad);
      expect(TIER_ORDER[r.tier], bad).toBeGreaterThanOrEqual(TIER_ORDER.caution);
      expect(
        r.reasons.some((x) => x.startsWith('could not parse')),
        bad,
      ).toBe(true);
    }
    expect(classifyCommand('rm -rf / "').tier).toBe('blocked');
    expect(classifyCommand('rm -rf "/').tier).toBe('blocked');
    expect(classifyCommand(':(){ :|:& };: (').tier).toBe('blocked');
    expect(classifyCommand('mkfs.ext4 /dev/sda1 "').tier).toBe('blocked');
    expect(classifyCommand('').tier).toBe('safe');
    expect(classifyCommand(undefined as unknown as string).tier).toBeDefined();
  });

  it('survives random garbage', () => {
    let seed = 42;
    const rand = (): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    const alphabet = ` \t\n;&|<>()$\`'"\\{}[]*?!#~=-/.:,%^@abcrmsudoEOF0123é`;
    for (let i = 0; i < 400; i++) {
      let s = '';
      const n = Math.floor(rand() * 40);
      for (let j = 0; j < n; j++) s += alphabet[Math.floor(rand() * alphabet.length)];
      const r = classifyCommand(s);
      expect(Object.keys(TIER_ORDER)).toContain(r.tier);
      expect(r.reasons.length).toBeGreaterThan(0);
    }
  });

  it('marks sudo on a safe command as caution, noting the privilege', () => {
    const r = classifyCommand('sudo ls -la /root');
    expect(r.tier).toBe('caution');
    expect(r.reasons).toContain('runs with elevated privileges (sudo)');
    expect(classifyCommand('doas cat /etc/shadow').tier).toBe('caution');
  });

  it('marks ordinary state changes as caution', () => {
    expect(classifyCommand('mv a b').tier).toBe('caution');
    expect(classifyCommand('echo hi > out.txt')).toEqual({ tier: 'caution', reasons: ['redirect overwrites out.txt'] });
    expect(classifyCommand('ls >> out.txt').reasons).toEqual(['redirect appends to out.txt']);
    expect(classifyCommand('rm notes.txt').tier).toBe('caution');
    expect(classifyCommand('echo $(date)').reasons).toContain('uses command substitution');
    expect(classifyCommand('frobnicate --all').reasons).toEqual(["runs 'frobnicate' (not known to be read-only)"]);
  });

  it('allows harmless redirections on safe commands', () => {
    for (const c of ['ls 2>/dev/null', 'ls >/dev/null', 'ls 2>&1', 'ls > /dev/null 2>&1', 'ls &>/dev/null', 'echo x >&2', 'wc -l < file.txt']) {
      expect(classifyCommand(c).tier, c).toBe('safe');
    }
  });

  it('distinguishes SQL with and without WHERE', () => {
    const scoped = classifyCommand('psql -c "DELETE FROM t WHERE id=1"');
    expect(scoped.tier).toBe('caution');
    expect(scoped.reasons).toContain('psql deletes rows (DELETE ... WHERE)');
    expect(classifyCommand('psql -c "DELETE FROM t"').tier).toBe('dangerous');
    expect(classifyCommand(`mysql -e "UPDATE users SET name='x' WHERE id = 3"`).tier).toBe('caution');
    expect(classifyCommand(`mysql -e "UPDATE users SET name='x'"`).tier).toBe('dangerous');
    expect(classifyCommand(`psql -c "SELECT 'DROP TABLE x'"`).tier).toBe('caution');
  });

  it('reads heredocs and herestrings fed to shells, interpreters and database clients', () => {
    expect(classifyCommand('sh <<EOF\nrm -rf /\nEOF').tier).toBe('blocked');
    expect(classifyCommand("bash <<'EOF'\ncd /tmp\nrm -rf ~\nEOF").tier).toBe('blocked');
    expect(classifyCommand('cat <<EOF | sudo bash\nmkfs.ext4 /dev/sda1\nEOF').tier).toBe('blocked');
    expect(classifyCommand('psql <<SQL\nBEGIN;\nDROP TABLE users;\nCOMMIT;\nSQL').tier).toBe('dangerous');
    expect(classifyCommand('psql <<SQL\nDELETE FROM t WHERE id = 1;\nSQL').tier).toBe('caution');
    expect(classifyCommand('python3 - <<EOF\nimport os\nos.system("reboot")\nEOF').tier).toBe('blocked');
    expect(classifyCommand('sqlite3 app.db <<< "DELETE FROM events"').tier).toBe('dangerous');
    expect(classifyCommand('cat <<EOF\nrm -rf /\nEOF').tier).toBe('safe');
  });

  it('follows variables, defaults and substitutions that resolve statically', () => {
    expect(classifyCommand('d=/; rm -rf "$d"').tier).toBe('blocked');
    expect(classifyCommand('rm -rf "${X:-/}"').tier).toBe('blocked');
    expect(classifyCommand('rm${IFS}-rf${IFS}/').tier).toBe('blocked');
    expect(classifyCommand('$(echo rm) -rf /').tier).toBe('blocked');
    expect(classifyCommand('p=$(curl -s https://x); eval "$p"').tier).toBe('dangerous');
    expect(classifyCommand('d=/tmp/build; rm -rf "$d"').tier).toBe('dangerous');
  });

  it('is not fooled by data that merely mentions dangerous commands', () => {
    for (const c of [
      'echo "rm -rf /"',
      "grep -r 'mkfs' docs/",
      'ls # rm -rf /',
      "printf '%s\\n' 'shutdown -h now'",
      'man shutdown',
      'cat <<EOF\nreboot\nEOF',
    ]) {
      expect(classifyCommand(c).tier, c).toBe('safe');
    }
  });

  it('classifies kill of specific pids as caution and kill of everything as blocked', () => {
    expect(classifyCommand('kill -9 4242').tier).toBe('caution');
    expect(classifyCommand('kill -9 -1').tier).toBe('blocked');
    expect(classifyCommand('kill -l').tier).toBe('safe');
  });
});

describe('corpus loading', () => {
  it('drops comments and blank lines', () => {
    const dir = mkdtempSync(join(tmpdir(), 'corpus-'));
    try {
      const file = join(dir, 'c.txt');
      writeFileSync(file, '# header\n\nls -la\r\n   \n  # indented comment\necho "# not a comment"\n');
      expect(loadLines(file)).toEqual(['ls -la', 'echo "# not a comment"']);
      expect(loadCommandCorpus(file)).toEqual(['ls -la', 'echo "# not a comment"']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
