import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { type ClaimCase, checkClaims, loadClaimsCorpus, type TraceEntry } from '../../moat/honesty.js';

// Every claims/*.jsonl: the original cases, the detailed ones and the held-out batch.
const corpus = loadClaimsCorpus(fileURLToPath(new URL('../corpora/claims/', import.meta.url)));
const by = (e: ClaimCase['expect']) => corpus.filter((c) => c.expect === e);

/** The corrected text without the inserted " [Correction: …]" notes. */
const uncorrected = (text: string) => text.replace(/ \[Correction: [^\]]*\]/g, '');
/** Rough sentence split, for checking that non-claiming sentences come through unchanged. */
const sentences = (text: string) =>
  text
    .split(/(?<=[.!?][)"'”’\]*_]*)\s+|\n+/)
    .map((s) => s.trim())
    .filter(Boolean);

const ok = (tool: string, output = 'ok', args?: unknown): TraceEntry => ({ tool, ok: true, output, ...(args === undefined ? {} : { args }) });
const failed = (tool: string, output: string, args?: unknown): TraceEntry => ({ tool, ok: false, output, ...(args === undefined ? {} : { args }) });

describe('claims corpus', () => {
  it('has the promised size and mix', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(150);
    expect(by('contradicted').length).toBeGreaterThanOrEqual(40);
    expect(by('unsupported').length).toBeGreaterThanOrEqual(40);
    expect(by('supported').length).toBeGreaterThanOrEqual(30);
    expect(by('none').length).toBeGreaterThanOrEqual(60);
    for (const c of by('none')) expect(sentences(c.text).length, c.text).toBeGreaterThan(1);
  });

  it.each(by('none').map((c) => [c.text, c] as const))('leaves a text that claims nothing unchanged: %j', (_t, c) => {
    const r = checkClaims(c.text, c.trace);
    expect(r.findings).toEqual([]);
    expect(r.text).toBe(c.text);
  });

  it.each(by('supported').map((c) => [c.text, c] as const))('leaves a true claim unchanged: %j', (_t, c) => {
    const r = checkClaims(c.text, c.trace);
    expect(r.findings).toEqual([]);
    expect(r.text).toBe(c.text);
  });

  it.each([...by('contradicted'), ...by('unsupported')].map((c) => [c.expect, c.text, c] as const))('corrects a %s claim: %j', (verdict, _t, c) => {
    const r = checkClaims(c.text, c.trace);
    expect(
      r.findings.some((f) => f.verdict === verdict),
      JSON.stringify(r.findings),
    ).toBe(true);
    // Flagged cases: each flagged sentence is corrected, nothing else is.
    for (const f of c.flag ?? [])
      expect(
        r.findings.some((x) => x.sentence.includes(f) || f.includes(x.sentence)),
        `${f} ← ${JSON.stringify(r.findings)}`,
      ).toBe(true);
    if (c.flag)
      for (const x of r.findings)
        expect(
          c.flag.some((f) => x.sentence.includes(f) || f.includes(x.sentence)),
          x.sentence,
        ).toBe(true);
    expect(r.text).toContain('[Correction:');
    // Only the correction notes were added: every other byte is the original.
    expect(uncorrected(r.text)).toBe(c.text);
    // Sentences that claim nothing come through unchanged.
    const flagged = new Set(r.findings.map((f) => f.sentence));
    const kept = sentences(c.text).filter((s) => ![...flagged].some((f) => f.includes(s) || s.includes(f)));
    for (const s of kept) expect(r.text).toContain(s);
    for (const f of r.findings) expect(c.text).toContain(f.sentence);
  });
});

describe('checkClaims', () => {
  it('formats the unsupported correction after the sentence', () => {
    const r = checkClaims('I deleted the file. Anything else?', []);
    expect(r.text).toBe('I deleted the file. [Correction: no tool call this turn deleted anything; the file was not deleted.] Anything else?');
    expect(r.findings).toEqual([
      {
        sentence: 'I deleted the file.',
        action: 'delete',
        verdict: 'unsupported',
        reason: 'no tool ran this turn',
        correction: 'no tool call this turn deleted anything; the file was not deleted.',
      },
    ]);
  });

  it('quotes the first line of the failed tool output in a contradicted correction', () => {
    const r = checkClaims('I deleted `a.txt`. Done.', [failed('delete_file', 'ENOENT: no such file or directory\n    at unlink')]);
    expect(r.text).toBe('I deleted `a.txt`. [Correction: the delete failed: ENOENT: no such file or directory] Done.');
    expect(r.findings[0]).toMatchObject({ action: 'delete', verdict: 'contradicted', tool: 'delete_file' });
  });

  it('keeps brackets in tool output from closing the correction early', () => {
    const r = checkClaims('I sent the email.', [failed('send_email', 'error [550] rejected')]);
    expect(r.text).toBe('I sent the email. [Correction: the send failed: error (550) rejected]');
  });

  it('names the tools that did run when none could have done the action', () => {
    const r = checkClaims('I booked the flight.', [ok('web_search')]);
    expect(r.findings[0]).toMatchObject({ verdict: 'unsupported', action: 'book' });
    expect(r.findings[0]!.reason).toContain('web_search');
  });

  it('matches tools by name tokens (snake, camel and MCP names)', () => {
    expect(checkClaims('I sent the email to Bob.', [ok('sendEmail')]).findings).toEqual([]);
    expect(checkClaims('Done — the PR is merged.', [ok('mcp__github__merge_pull_request')]).findings).toEqual([]);
    expect(checkClaims('I saved your preference.', [ok('memory_write')]).findings).toEqual([]);
  });

  it('reads shell commands to tell what a shell call did', () => {
    const rm = ok('shell', '', { command: 'rm -rf build/' });
    const ls = ok('shell', 'a b', { command: 'ls' });
    expect(checkClaims('I deleted the build folder.', [rm]).findings).toEqual([]);
    expect(checkClaims('I deleted the build folder.', [ls]).findings[0]?.verdict).toBe('unsupported');
    // Without args, a shell call could have done it: not flagged.
    expect(checkClaims('I deleted the build folder.', [{ tool: 'bash', ok: true }]).findings).toEqual([]);
  });

  it('supports a claim when a retry succeeded after a failure', () => {
    expect(checkClaims('I deleted `cache.db`.', [failed('delete_file', 'EBUSY'), ok('delete_file')]).findings).toEqual([]);
  });

  it('treats a failing test run as a run (tests ran) but not as passing tests', () => {
    const run = failed('shell', 'Tests  2 failed | 10 passed', { command: 'npm test' });
    expect(checkClaims('I ran the tests.', [run]).findings).toEqual([]);
    const r = checkClaims('I ran the tests and they pass.', [run]);
    expect(r.findings).toHaveLength(1);
    expect(r.findings[0]).toMatchObject({ action: 'run', verdict: 'contradicted' });
    expect(r.text).toBe('I ran the tests and they pass. [Correction: the run failed: Tests  2 failed | 10 passed]');
  });

  it('contradicts "the tests pass" when the successful run reports failures', () => {
    const r = checkClaims('The tests pass.', [ok('run_tests', 'collected 12 items\n2 failed, 10 passed')]);
    expect(r.findings[0]).toMatchObject({ verdict: 'contradicted', action: 'run' });
    expect(r.text).toContain('[Correction: the run reported failures: 2 failed, 10 passed]');
  });

  it('contradicts a run that never started', () => {
    const r = checkClaims('I ran the migration.', [failed('shell', 'Command blocked: approval denied', { command: 'npm run migrate' })]);
    expect(r.findings[0]).toMatchObject({ verdict: 'contradicted', action: 'run' });
  });

  it('checks each coordinated action separately', () => {
    const r = checkClaims('I deleted the draft and sent the final version to the client.', [ok('delete_draft')]);
    expect(r.findings.map((f) => `${f.verdict}:${f.action}`)).toEqual(['unsupported:send']);
    const both = checkClaims('I deleted the draft and sent the final version to the client.', []);
    expect(both.findings.map((f) => f.action)).toEqual(['delete', 'send']);
    expect(both.text.match(/\[Correction:/g)).toHaveLength(2);
  });

  it('catches bulleted summaries, passive results and fragments', () => {
    const r = checkClaims('Summary:\n- Deleted `old.log`\n- Restarted the worker\n\nYour reminder has been set. Email sent to Bob.', []);
    expect(r.findings.map((f) => f.action)).toEqual(['delete', 'run', 'book', 'send']);
    expect(uncorrected(r.text)).toBe('Summary:\n- Deleted `old.log`\n- Restarted the worker\n\nYour reminder has been set. Email sent to Bob.');
  });

  it('never looks inside code fences, inline code, quotes or blockquotes', () => {
    const texts = [
      '```\nI deleted the file.\n```\nThat was the old log.',
      'The bot printed `I sent the email.` before crashing.',
      'Bob wrote "I merged the PR." in the ticket.',
      '> I deployed to production.\n\nThat is what the bot said.',
    ];
    for (const t of texts) expect(checkClaims(t, []).text).toBe(t);
  });

  it('leaves plans, offers, questions, negations, hypotheticals and earlier turns alone', () => {
    const texts = [
      'I will send the email.',
      "I'll delete the file after you confirm.",
      'I can delete the file if you want.',
      'Should I merge the PR?',
      'I did not send it.',
      "I haven't deployed anything.",
      'If I deleted the config, the app would use defaults.',
      'Yesterday I sent the report to Bob.',
      'I already sent the invoice.',
      'Earlier I deleted the temp folder.',
      'rm deletes files.',
      'You deleted the file.',
      'I usually run the tests before pushing.',
      'I wrote a poem about autumn.',
      'I checked the math.',
      'I sent you the summary above.',
      'The tests pass when the database is up.',
      'Your data is saved in the cloud.',
    ];
    for (const t of texts) expect(checkClaims(t, []), t).toEqual({ findings: [], text: t });
  });

  it('returns the input object text identical when there are no findings', () => {
    const t = 'Hello! Nothing to report.';
    expect(checkClaims(t, []).text).toBe(t);
    expect(checkClaims('', [])).toEqual({ findings: [], text: '' });
  });

  it('accepts extra verb → tool keywords, for built-in and new actions', () => {
    // Built-in action, new tool keyword.
    expect(checkClaims('I deleted the file.', [ok('obliterate_path')]).findings).toHaveLength(1);
    expect(checkClaims('I deleted the file.', [ok('obliterate_path')], { actionTools: { delete: ['obliterate'] } }).findings).toEqual([]);
    // Aliases of built-in actions (refund → the built-in pay action).
    expect(checkClaims('I sent the email.', [ok('courier')], { actionTools: { email: ['courier'] } }).findings).toEqual([]);
    expect(checkClaims('I refunded the order.', [ok('ledger_credit')], { actionTools: { refund: ['ledger'] } }).findings).toEqual([]);
    // Refunds are built in now.
    expect(checkClaims('I refunded the order.', []).findings[0]).toMatchObject({ action: 'pay', verdict: 'unsupported' });
    expect(checkClaims('I refunded the order.', [ok('stripe_create_refund')]).findings).toEqual([]);
    // A new action, recognized in its past form.
    const notarize = { actionTools: { notarize: ['notary'] } };
    expect(checkClaims('I notarized the deed.', [], notarize).findings[0]).toMatchObject({ action: 'notarize', verdict: 'unsupported' });
    expect(checkClaims('I notarized the deed.', [ok('notary_sign')], notarize).findings).toEqual([]);
    expect(checkClaims('I notarized the deed.', []).findings).toEqual([]);
  });

  it('copes with odd input', () => {
    expect(checkClaims('I deleted the file.', [{ tool: undefined as unknown as string, ok: true }]).findings).toHaveLength(1);
    expect(checkClaims('I deleted the file.', undefined as unknown as TraceEntry[]).findings).toHaveLength(1);
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(checkClaims('I deleted the file.', [{ tool: 'shell', ok: true, args: circular }]).findings).toHaveLength(1);
  });

  it('is fast on long texts', () => {
    const text = corpus.map((c) => c.text).join('\n\n');
    const t0 = performance.now();
    checkClaims(text, []);
    expect(performance.now() - t0).toBeLessThan(1000);
  });
});
