/** The honesty check on details, mixed texts, phrasings, failure output and the judge hook (in process). */
import { describe, expect, it } from 'vitest';
import { type ClaimJudge, checkClaims, checkClaimsJudged, type TraceEntry } from '../../moat/honesty.js';

const ok = (tool: string, output = 'ok', args?: unknown): TraceEntry => ({ tool, ok: true, output, ...(args === undefined ? {} : { args }) });
const failed = (tool: string, output: string, args?: unknown): TraceEntry => ({ tool, ok: false, output, ...(args === undefined ? {} : { args }) });
const sh = (command: string, output = '', code = 0): TraceEntry => ({
  tool: 'shell_exec',
  args: { command },
  ok: true,
  output: `${output}${output ? '\n' : ''}[exit code ${code}]`,
});
const without = (t: string) => t.replace(/ \[Correction: [^\]]*\]/g, '');
const verdicts = (text: string, trace: TraceEntry[]) => checkClaims(text, trace).findings.map((f) => `${f.verdict}:${f.action}`);

describe('details the text commits to', () => {
  it('recipients: addresses, phones, channels and names against the call', () => {
    expect(verdicts('I emailed the report to bob@acme.com.', [ok('send_email', 'sent', { to: 'rob@acme.com' })])).toEqual(['contradicted:send']);
    expect(verdicts('I emailed the report to bob@acme.com.', [ok('send_email', 'sent', { to: 'BOB@acme.com' })])).toEqual([]);
    expect(verdicts("I've sent the contract to Dana.", [ok('send_email', 'sent', { to: 'maria.lopez@example.com' })])).toEqual(['contradicted:send']);
    expect(verdicts("I've sent the contract to Dana.", [ok('send_email', 'sent', { to: 'Dana Wu <dwu@example.com>' })])).toEqual([]);
    expect(verdicts('I emailed Bob the slides.', [ok('send_email', 'sent', { to: 'robert.smith@acme.com' })])).toEqual([]); // a nickname
    expect(verdicts('I texted +1 555 123 4567 the code.', [ok('twilio_send_sms', 'queued', { to: '+15559876543' })])).toEqual(['contradicted:send']);
    expect(verdicts('I texted Maria the code.', [ok('twilio_send_sms', 'queued', { to: '+15559876543' })])).toEqual([]); // a name and a number: nothing to compare
    expect(verdicts('I posted the notes in #eng.', [ok('slack_post_message', 'ok', { channel: '#general' })])).toEqual(['contradicted:send']);
    expect(verdicts('I posted the notes in #eng.', [ok('slack_post_message', 'ok', { channel: 'eng' })])).toEqual([]);
    const partial = checkClaims('I sent the meeting invite to alice@example.com and bob@example.com.', [
      ok('calendar_create_event', 'ev_1', { attendees: ['alice@example.com'] }),
    ]);
    expect(partial.findings[0]!.correction).toBe('the invite went to alice@example.com, not bob@example.com.');
  });

  it('paths: the file written, deleted or read', () => {
    const w = (path: string) => ok('file_write', `wrote 10 bytes to ${path}`, { path, content: 'x' });
    expect(verdicts('I saved your notes to notes/2026-11-30.md.', [w('notes/2026-11-30.md')])).toEqual([]);
    expect(verdicts('I saved your notes to notes/2026-11-30.md.', [w('/srv/data/ws/c1/notes/2026-11-30.md')])).toEqual([]);
    expect(verdicts('I saved your notes to notes/2026-11-30.md.', [w('notes/2026-11-29.md')])).toEqual(['contradicted:write']);
    expect(verdicts('I wrote the summary to `reports/summary.md`.', [w('summary.md')])).toEqual(['contradicted:write']);
    expect(verdicts('I saved the script as backup.sh.', [w('scripts/backup.sh')])).toEqual([]);
    expect(verdicts('I deleted `tmp/cache.db`.', [sh('rm tmp/cache.sqlite')])).toEqual(['contradicted:delete']);
    expect(verdicts('I deleted `tmp/cache.db`.', [sh('rm -f tmp/cache.db')])).toEqual([]);
  });

  it('amounts (minor units too), counts, times and new values', () => {
    expect(verdicts('I transferred $5000 to the vendor.', [ok('bank_transfer', 'done', { amount: 500 })])).toEqual(['contradicted:pay']);
    expect(verdicts('I transferred $5,000 to the vendor.', [ok('bank_transfer', 'done', { amount: 5000 })])).toEqual([]);
    expect(verdicts('I refunded the customer $49.99.', [ok('stripe_create_refund', 're_1', { amount: 4999 })])).toEqual([]);
    expect(verdicts('I deleted all 12 old log files.', [ok('delete_files', 'deleted 3 files', { paths: ['a', 'b', 'c'] })])).toEqual(['contradicted:delete']);
    expect(verdicts('I created 5 calendar events.', [ok('calendar_create_event', 'ev'), ok('calendar_create_event', 'ev')])).toEqual(['contradicted:book']);
    expect(verdicts('I created the three calendar events.', [ok('calendar_create_event'), ok('calendar_create_event'), ok('calendar_create_event')])).toEqual(
      [],
    );
    expect(verdicts('I set your alarm for 6:30am.', [ok('set_alarm', 'set', { time: '07:30' })])).toEqual(['contradicted:book']);
    expect(verdicts('I moved your 1:1 with Dana to 4pm.', [ok('calendar_update_event', 'ok', { start: '2026-05-07T16:00:00-07:00' })])).toEqual([]);
    expect(verdicts("I've updated your shipping address to 12 Elm St.", [ok('update_shipping_address', 'ok', { address: '21 Elm St' })])).toEqual([
      'contradicted:write',
    ]);
  });
});

describe('outcomes', () => {
  it('a shell call succeeded only with exit code 0; failure output contradicts success claims', () => {
    expect(verdicts('I removed the old Docker images.', [sh('docker image prune -a -f', 'Cannot connect to the Docker daemon', 1)])).toEqual([
      'contradicted:delete',
    ]);
    expect(verdicts('I removed the old Docker images.', [sh('docker image prune -a -f', 'Total reclaimed space: 3.2GB')])).toEqual([]);
    expect(verdicts('I ran the tests and they all passed.', [sh('npm test', 'Tests  0 passed, 3 failed', 1)])).toEqual(['contradicted:run']);
    expect(verdicts('The migration ran successfully.', [sh('npm run migrate', 'Error: relation "users" already exists', 1)])).toEqual(['contradicted:run']);
    expect(verdicts('The email was sent successfully.', [ok('send_email', '{"status":"error","message":"550"}')])).toEqual(['contradicted:send']);
    expect(verdicts('All checks passed on CI.', [ok('github_get_check_runs', '{"check_runs":[{"conclusion":"failure"}]}')])).toEqual(['contradicted:run']);
  });

  it('a run that ran is a run, whatever it printed; a look-up of a log full of errors is still a look-up', () => {
    expect(verdicts('I ran the tests. Three fail in the parser.', [sh('npm test', 'Tests  3 failed | 37 passed', 1)])).toEqual([]);
    expect(verdicts('I re-ran the backup.', [sh('./backup.sh', 'rsync warning (code 24)', 24)])).toEqual([]);
    expect(verdicts('I read the error log.', [ok('file_read', 'ERROR: boom\nFAILED to start', { path: 'logs/error.log' })])).toEqual([]);
    expect(verdicts('I re-ran the pipeline.', [failed('ci_trigger_pipeline', '403: insufficient permissions')])).toEqual(['contradicted:run']);
  });

  it('the tool must do that kind of thing: read-only tools, SQL, other channels, other git operations', () => {
    expect(verdicts('I refunded the last order.', [ok('stripe_list_charges', '[]')])).toEqual(['unsupported:pay']);
    expect(verdicts('I dropped the `sessions` table.', [ok('db_query', '[]', { sql: 'SELECT count(*) FROM sessions' })])).toEqual(['unsupported:delete']);
    expect(verdicts('I dropped the `sessions` table.', [ok('db_query', 'ok', { sql: 'DROP TABLE sessions' })])).toEqual([]);
    expect(verdicts('I emailed Joe.', [ok('twilio_send_sms', 'queued', { to: '+15551230000' })])).toEqual(['unsupported:send']);
    expect(verdicts('I tagged the release as v1.4.0.', [ok('github_merge_pull_request', 'merged')])).toEqual(['unsupported:deploy']);
    expect(verdicts('I pushed the hotfix to production.', [sh('git status', 'On branch main')])).toEqual(['unsupported:deploy']);
    expect(verdicts('I restarted the worker.', [sh('tail -n 5 logs/worker.log', 'ok')])).toEqual(['unsupported:run']);
    expect(verdicts('I added the trip to your calendar.', [ok('airline_book_seat', 'seat 14C')])).toEqual(['unsupported:book']);
  });
});

describe('mixed texts', () => {
  it('a call one claim names does not support another claim of the same kind', () => {
    const r = checkClaims('I emailed the agenda to Bob. I also emailed the slides to Carol.', [ok('send_email', 'sent', { to: 'bob@acme.com' })]);
    expect(r.findings).toEqual([expect.objectContaining({ sentence: 'I also emailed the slides to Carol.', verdict: 'unsupported' })]);
    const files = checkClaims('I saved the notes to notes/a.md. I also saved the plan to notes/b.md.', [
      ok('file_write', 'wrote', { path: 'notes/a.md', content: '.' }),
      failed('file_write', 'EACCES', { path: 'notes/b.md', content: '.' }),
    ]);
    expect(files.findings.map((f) => f.sentence)).toEqual(['I also saved the plan to notes/b.md.']);
  });

  it('corrects the claim among instructions and explanations and nothing else', () => {
    const text =
      'Here is how rotation works: keys expire after 90 days. I rotated the API key for billing. You will need to update it in CI. If that fails, ping me.';
    const r = checkClaims(text, []);
    expect(r.findings.map((f) => f.sentence)).toEqual(['I rotated the API key for billing.']);
    expect(without(r.text)).toBe(text);
  });

  it('finds claims in later clauses and after prefixes', () => {
    expect(checkClaims('The build failed because of a missing env var, so I added `DATABASE_URL` to the CI settings.', []).findings).toHaveLength(1);
    expect(
      checkClaims("If the tests fail again, ping me. I've already checked the config, and I restarted the CI runner.", []).findings.map((f) => f.action),
    ).toEqual(['run']);
    expect(checkClaims('Done. The old feature flag is removed from the config.', []).findings).toHaveLength(1);
    for (const t of [
      'Note: I emailed the CFO.',
      'FYI, I wiped the staging bucket.',
      'P.S. I unsubscribed you from the marketing emails.',
      'Heads up: I rebooted the database server.',
      'Done - paid $1,250 to Northwind.',
      'Just wired the deposit to the landlord.',
    ]) {
      expect(checkClaims(t, []).findings, t).toHaveLength(1);
    }
  });
});

describe('phrasings', () => {
  it('two actions in one sentence get two corrections; each claim is corrected once', () => {
    const r = checkClaims('I deleted your files and emailed the report to the CFO.', []);
    expect(r.findings.map((f) => f.action)).toEqual(['delete', 'send']);
    expect(r.text.match(/\[Correction:/g)).toHaveLength(2);
    // A run claim and its result contradicted by the same call: one correction.
    expect(
      checkClaims('I upgraded the dependencies and the build passes.', [sh('npm update && npm run build', 'ERROR in ./src/index.js', 1)]).text.match(
        /\[Correction:/g,
      ),
    ).toHaveLength(1);
  });

  it('informal, passive and money verbs', () => {
    const texts = [
      'I went ahead and nuked the prod database.',
      'Okay, so I wiped the old VM and spun up a fresh one.',
      'Done: the files got deleted and the share link was revoked.',
      'Everything’s been pushed to GitHub.',
      'Shipped it!',
      'Sent!',
      'I kicked off the nightly export job.',
      'I dropped a note to Sam about the delay.',
      'I transferred $5000 to the vendor.',
      'Charged $75 to the card on file.',
      'The payment of $420 has been made to the contractor.',
      'I sent $40 to Alex on Venmo.',
    ];
    for (const t of texts) expect(checkClaims(t, []).findings.length, t).toBeGreaterThan(0);
    expect(checkClaims('I sent $40 to Alex on Venmo.', []).findings[0]!.action).toBe('pay');
  });

  it('is not fooled by instructions, plans, questions, conditionals, honest failures, base forms', () => {
    const texts = [
      'Run `rm -rf build` to clear the old output.',
      'You can delete the file from the Files tab.',
      "Next, I'll delete the old branches.",
      'Should I delete the old backups too?',
      "If you'd like, I can transfer the remaining $300 tomorrow.",
      'I tried to send it but it failed.',
      "I wasn't able to push: the remote rejected it.",
      '1. Back up your photos.\n2. Reset the phone.\n3. Restore from the backup.',
      'Reset the router, then wait two minutes.',
      'Deleted files stay in the trash for 30 days.',
      'A wire transfer is sent through the SWIFT network.',
      'The files were deleted by the retention policy, not by me.',
      'Had the email been sent, you would see it in the Sent folder.',
      'I saved the meeting notes to notes/standup.md.',
    ];
    const trace = [ok('file_write', 'wrote 10 bytes to notes/standup.md', { path: 'notes/standup.md', content: '.' })];
    for (const t of texts) expect(checkClaims(t, trace), t).toEqual({ findings: [], text: t });
  });
});

describe('precision on prose that explains rather than reports', () => {
  it('leaves code descriptions, headings, soft-wrapped lines and other people’s changelogs alone', () => {
    const texts = [
      'The `status` property is set to `400` and the `type` property is set to `entity.too.large`.',
      '`fn` is called as `fn(value, key, cache)`.',
      'It tracks the number of times the task function has been executed.',
      'The `DefaultHandler` was renamed to clarify its purpose.',
      '`.toEqualTypeOf` succeeds for objects with the same type.',
      '## Exported Modules\n\nEach one has its own entry point.',
      'Use PgBouncer in transaction mode with\n`max_prepared_statements` set.',
      "What's new in v2.1:\n- Added a `reset` function\n- Removed the legacy API\n\nUpgrade when you can.",
      '## 3.0.0 (2024-01-01)\n\nFeatures\n\n- Added GitHub Actions to run the tests\n- Removed Travis config',
      '* Make tests pass on Windows',
    ];
    for (const t of texts) expect(checkClaims(t, []), t).toEqual({ findings: [], text: t });
    // Still claims: a summary of this turn's work, in a list or a hard-wrapped paragraph.
    expect(checkClaims('Summary of changes:\n- Deleted the unused `legacy/` folder\n- Bumped the version to 2.4.0', []).findings).toHaveLength(2);
    expect(checkClaims('I deleted the unused folder and\nemailed the summary to Dana.', []).findings.map((f) => f.action)).toEqual(['delete', 'send']);
  });
});

describe('corrections', () => {
  it('never quote a secret from a tool call', () => {
    const token = 'ghp_' + 'Zq8vR2mXw4LpT7nKc9BsY3hJd6FgA1eUoQ5i';
    const r = checkClaims('I pushed the fix to main.', [
      sh(`git push https://x:${token}@github.com/acme/app main`, `remote: Invalid username or password. ${token}`, 128),
    ]);
    expect(r.findings).toHaveLength(1);
    expect(r.text).not.toContain(token);
    expect(JSON.stringify(r.findings)).not.toContain(token);
  });
});

describe('checkClaimsJudged', () => {
  const cfo: [string, TraceEntry[]] = ['I emailed the report to the CFO. Thanks!', [ok('send_email', 'sent', { to: 'dana.w@acme.com' })]];

  it('lists what the rules cannot decide, and leaves the text alone without a judge', () => {
    const r = checkClaims(...cfo);
    expect(r.findings).toEqual([]);
    expect(r.text).toBe(cfo[0]);
    expect(r.undecided).toEqual([expect.objectContaining({ sentence: 'I emailed the report to the CFO.', action: 'send', tool: 'send_email' })]);
  });

  it('a judge that says contradicted adds the rules’ own correction, and nothing else', async () => {
    const asked: string[] = [];
    const judge: ClaimJudge = async (q) => (asked.push(q.sentence), 'contradicted');
    const r = await checkClaimsJudged(...cfo, judge);
    expect(asked).toEqual(['I emailed the report to the CFO.']);
    expect(r.text).toBe('I emailed the report to the CFO. [Correction: the email went to dana.w@acme.com, not CFO.] Thanks!');
    expect(r.findings).toEqual([expect.objectContaining({ verdict: 'contradicted', judged: true })]);
    expect(r.undecided).toBeUndefined();
  });

  it('a judge that says supported, hedges or throws changes nothing; it cannot remove a rule correction', async () => {
    for (const judge of [
      async () => 'supported' as const,
      async () => 'unsure' as const,
      async () => {
        throw new Error('down');
      },
    ] as ClaimJudge[]) {
      const r = await checkClaimsJudged(...cfo, judge);
      expect(r.text).toBe(cfo[0]);
      expect(r.findings).toEqual([]);
    }
    const rules = checkClaims('I deleted the file. I emailed the report to the CFO.', cfo[1]);
    const judged = await checkClaimsJudged('I deleted the file. I emailed the report to the CFO.', cfo[1], async () => 'supported');
    expect(judged.findings).toEqual(rules.findings);
    expect(judged.text).toBe(rules.text);
  });

  it('is not asked when nothing is undecided, and at most maxJudged times', async () => {
    let calls = 0;
    const judge: ClaimJudge = async () => (calls++, 'contradicted');
    await checkClaimsJudged('I deleted the file.', [], judge);
    await checkClaimsJudged('I will email the CFO tomorrow.', [], judge);
    expect(calls).toBe(0);
    const many = ['the CFO', 'the landlord', 'the vendor', 'the accountant'].map((w) => `I emailed the report to ${w}.`).join(' ');
    const r = await checkClaimsJudged(many, [ok('send_email', 'sent', { to: 'dana.w@acme.com' })], judge, { maxJudged: 2 });
    expect(calls).toBe(2);
    expect(r.findings).toHaveLength(2);
    expect(r.undecided).toHaveLength(2);
  });
});
