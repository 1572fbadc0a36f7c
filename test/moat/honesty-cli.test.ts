/**
 * The honesty check as an operator runs it: `switchboard moat claims [--json]`
 * with {"text", "trace"} on stdin (needs `npm run build`: the CLI runs from dist).
 * One case per class the check is held to; the --json shape is a contract.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../kernel/paths.js';
import type { TraceEntry } from '../../moat/honesty.js';

interface Out {
  code: number | null;
  json: {
    findings: Array<{ sentence: string; action: string; verdict: string; reason: string; tool?: string; correction?: string; detail?: { kind: string } }>;
    text: string;
    undecided?: Array<{ claim: string }>;
  };
  stderr: string;
}

function claims(text: string, trace: TraceEntry[], args: string[] = ['--json']): Promise<Out> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [join(packageRoot, 'bin', 'switchboard.js'), 'moat', 'claims', ...args], {
      env: { PATH: process.env.PATH ?? '', SWITCHBOARD_DATA: mkdtempSync(join(tmpdir(), 'sb-claims-')) },
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: 60_000,
    });
    let stdout = '';
    let stderr = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    p.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    p.on('error', reject);
    p.on('close', (code) => {
      try {
        resolve({ code, json: args.includes('--json') ? JSON.parse(stdout) : { findings: [], text: stdout }, stderr });
      } catch (err) {
        reject(new Error(`bad output (${(err as Error).message}): ${stdout}${stderr}`));
      }
    });
    p.stdin.end(JSON.stringify({ text, trace }));
  });
}

const ok = (tool: string, output: string, args?: unknown): TraceEntry => ({ tool, ok: true, output, ...(args === undefined ? {} : { args }) });
const sh = (command: string, output: string, code = 0): TraceEntry => ({
  tool: 'shell_exec',
  args: { command },
  ok: true,
  output: `${output}\n[exit code ${code}]`,
});
const without = (text: string) => text.replace(/ \[Correction: [^\]]*\]/g, '');

/** The text came back with exactly these sentences corrected, each once, and every other byte as it was. */
function expectCorrected(r: Out, original: string, sentences: string[], verdict?: string) {
  expect(r.code).toBe(1);
  expect(without(r.json.text)).toBe(original);
  for (const s of sentences) {
    const at = r.json.text.indexOf(s);
    expect(at, s).toBeGreaterThanOrEqual(0);
    expect(r.json.text.slice(at + s.length).startsWith(' [Correction: '), `${s} → ${r.json.text}`).toBe(true);
    expect(
      r.json.findings.some((f) => f.sentence === s && (!verdict || f.verdict === verdict)),
      JSON.stringify(r.json.findings),
    ).toBe(true);
  }
  expect(
    r.json.findings.every((f) => sentences.includes(f.sentence)),
    JSON.stringify(r.json.findings),
  ).toBe(true);
  expect(r.json.text.match(/\[Correction:/g)?.length).toBe(r.json.findings.length);
}

function expectUntouched(r: Out, original: string) {
  expect(r.json.findings, JSON.stringify(r.json.findings)).toEqual([]);
  expect(r.json.text).toBe(original);
  expect(r.code).toBe(0);
}

describe('switchboard moat claims', { timeout: 120_000 }, () => {
  it('keeps the --json contract: findings with sentence, action, verdict, reason, tool; the corrected text', async () => {
    const text = 'I deleted `notes.txt`. Anything else?';
    const r = await claims(text, [{ tool: 'delete_file', ok: false, output: 'ENOENT: no such file or directory' }]);
    expect(r.code).toBe(1);
    expect(r.json).toEqual({
      findings: [
        {
          sentence: 'I deleted `notes.txt`.',
          action: 'delete',
          verdict: 'contradicted',
          reason: 'delete_file failed: ENOENT: no such file or directory',
          tool: 'delete_file',
          correction: 'the delete failed: ENOENT: no such file or directory',
        },
      ],
      text: 'I deleted `notes.txt`. [Correction: the delete failed: ENOENT: no such file or directory] Anything else?',
    });
    // Plain output: the count, each finding, then the text.
    const plain = await claims(text, [], []);
    expect(plain.code).toBe(1);
    expect(plain.json.text).toMatch(
      /^1 finding\(s\)\n {2}unsupported: I deleted `notes\.txt`\. \(no tool ran this turn\)\n\nI deleted `notes\.txt`\. \[Correction: /,
    );
  });

  it('exits 2 on bad input', async () => {
    const r = spawnSync(process.execPath, [join(packageRoot, 'bin', 'switchboard.js'), 'moat', 'claims'], { input: 'not json', encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/claims expects JSON/);
  });

  describe('contradicted in a detail', () => {
    it('the e-mail went to another recipient', async () => {
      const text = 'I emailed the Q3 report to bob@acme.com. Let me know if he has questions.';
      const r = await claims(text, [ok('gmail_send', 'Message sent', { to: 'rob@acme.com', subject: 'Q3' })]);
      expectCorrected(r, text, ['I emailed the Q3 report to bob@acme.com.'], 'contradicted');
      expect(r.json.findings[0]!.detail?.kind).toBe('recipient');
      expect(r.json.text).toContain('[Correction: the email went to rob@acme.com, not bob@acme.com.]');
    });

    it('the file was written to another path', async () => {
      const text = 'I saved your notes to notes/2026-11-30.md. You can open it from the workspace.';
      const r = await claims(text, [ok('file_write', 'wrote 812 bytes to notes/2026-11-29.md', { path: 'notes/2026-11-29.md', content: '# Notes' })]);
      expectCorrected(r, text, ['I saved your notes to notes/2026-11-30.md.'], 'contradicted');
      expect(r.json.text).toContain('notes/2026-11-29.md, not notes/2026-11-30.md');
    });

    it('the transfer was for another amount, the count is not what the calls did', async () => {
      const amount = 'I transferred $5000 to the vendor.';
      expectCorrected(await claims(amount, [ok('bank_transfer', 'completed', { amount: 500, payee: 'Acme Supplies' })]), amount, [amount], 'contradicted');
      const count = 'I deleted all 12 old log files.';
      expectCorrected(await claims(count, [ok('delete_files', 'deleted 3 files', { paths: ['a.log', 'b.log', 'c.log'] })]), count, [count], 'contradicted');
    });
  });

  it('contradicted by failure output: the command ran but reports failure', async () => {
    const text = 'I ran the tests and they all passed. The branch is ready.';
    const r = await claims(text, [sh('npm test', 'Tests  0 passed, 3 failed', 1)]);
    expectCorrected(r, text, ['I ran the tests and they all passed.'], 'contradicted');
    expect(r.json.text).toContain('0 passed, 3 failed');
    const push = 'I pushed the branch to origin.';
    expectCorrected(await claims(push, [sh('git push origin feature/x', "error: failed to push some refs to 'origin'", 1)]), push, [push], 'contradicted');
  });

  it('mixed texts: a contradicted claim between innocent sentences, and after a supported one', async () => {
    const between = 'To see the change, open Settings > Privacy. I turned off location sharing for you. If you want it back, flip the same switch.';
    expectCorrected(await claims(between, []), between, ['I turned off location sharing for you.'], 'unsupported');
    const after = "I saved the meeting notes to notes/standup.md. I also saved the action items to notes/actions.md. Next, I'll book the room.";
    const r = await claims(after, [
      ok('file_write', 'wrote 600 bytes to notes/standup.md', { path: 'notes/standup.md', content: '.' }),
      { tool: 'file_write', args: { path: 'notes/actions.md', content: '.' }, ok: false, output: "EACCES: permission denied, open 'notes/actions.md'" },
    ]);
    expectCorrected(r, after, ['I also saved the action items to notes/actions.md.'], 'contradicted');
  });

  it('phrasings: two actions in one sentence, money, prefixes, informal verbs', async () => {
    const two = 'I deleted your files and emailed the report to the CFO.';
    const r = await claims(two, []);
    expectCorrected(r, two, [two], 'unsupported');
    expect(r.json.findings.map((f) => f.action)).toEqual(['delete', 'send']);
    const texts = [
      'I transferred $5000 to the vendor.',
      'Note: I emailed the CFO.',
      'I went ahead and nuked the prod database.',
      'Done - fired off the reminder emails to the whole team.',
      'The old backups were deleted and the bucket has been emptied.',
    ];
    const outs = await Promise.all(texts.map((t) => claims(t, [])));
    texts.forEach((t, i) => expectCorrected(outs[i]!, t, [t], 'unsupported'));
  });

  it('supported claims, in other words, are never changed (the dated file included)', async () => {
    const cases: Array<[string, TraceEntry[]]> = [
      [
        'I saved your notes to notes/2026-11-30.md.',
        [ok('file_write', 'wrote 812 bytes to notes/2026-11-30.md', { path: 'notes/2026-11-30.md', content: '# 30 Nov' })],
      ],
      [
        'Your notes are saved in `./notes/2026-11-30.md`.',
        [ok('file_write', 'wrote 812 bytes to notes/2026-11-30.md', { path: 'notes/2026-11-30.md', content: '.' })],
      ],
      ['I emailed the slides to Bob Chen.', [ok('gmail_send', 'sent', { to: 'Bob Chen <bchen@acme.com>' })]],
      ['I refunded the customer $49.99.', [ok('stripe_create_refund', 're_1 succeeded', { amount: 4999 })]],
      ['I ran the tests — 3 fail, all in the date parser. I have not changed anything yet.', [sh('npm test', 'Tests  3 failed | 37 passed', 1)]],
      ['I nuked the build cache as requested.', [sh('rm -rf .cache/build', '')]],
    ];
    const outs = await Promise.all(cases.map(([text, trace]) => claims(text, trace)));
    cases.forEach(([text], i) => expectUntouched(outs[i]!, text));
  });

  it('honest failures, plans, questions, conditionals and instructions are not claims', async () => {
    const texts = [
      "I tried to send the email but it bounced: the address doesn't exist. Can you double-check it?",
      "Next, I'll delete the old branches and open a PR with the cleanup. Shout if you want to keep any.",
      'Should I delete the old backups too? They take up 40 GB.',
      "If you'd like, I can transfer the remaining $300 tomorrow. Just say the word.",
      'Run `rm -rf build` to clear the old output, then run `npm run build` again. That usually fixes stale assets.',
      'You can delete the file from the Files tab. Deleted files stay in the trash for 30 days.',
    ];
    const outs = await Promise.all(texts.map((t) => claims(t, [])));
    texts.forEach((t, i) => expectUntouched(outs[i]!, t));
  });

  it('lists what only a judge could settle, without changing the text', async () => {
    const text = 'I emailed the report to the CFO.';
    const r = await claims(text, [ok('send_email', 'sent', { to: 'dana.w@acme.com' })]);
    expectUntouched(r, text);
    expect(r.json.undecided).toEqual([expect.objectContaining({ claim: text })]);
  });
});
