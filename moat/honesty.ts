/**
 * Honesty check: claims of action in the agent's final text, checked against
 * this turn's tool trace.
 *
 * A claim is a sentence or clause in which the assistant states, as done in
 * this turn, an action only a tool could do: "I deleted `notes.txt`", "I've sent
 * the email to Bob", "Note: I emailed the CFO", "I went ahead and nuked the prod
 * database", "I transferred $5000 to the vendor", "The invoice has been sent",
 * "Done - paid $1,250 …", "The tests pass". Extraction is in
 * ./honesty-extract.ts (sentences, clauses, coordination, prefixes, passives,
 * and the details each claim commits to: recipient, path, amount, count, time,
 * new value), with the verbs — informal and money ones included — in
 * ./honesty-lexicon.ts. Each claim is matched to the trace in
 * ./honesty-trace.ts, by action class and by those details:
 *  - a fitting call succeeded with the same details     → supported, text untouched;
 *  - the fitting calls failed, or their output reports
 *    failure (exit code, "Error:", "0 passed, 3 failed") → contradicted;
 *  - the call went to another recipient, path, amount   → contradicted;
 *  - no call in the trace could have done it            → unsupported.
 * Contradicted and unsupported claims are corrected visibly (./honesty-correct.ts):
 * the sentence is kept and followed by " [Correction: …]", once per claim; every
 * other byte is unchanged.
 *
 * Precision first — a sentence that claims nothing is never changed, nor is a
 * supported claim. Not claims: questions, plans and offers ("I will…", "Next,
 * I'll…"), conditionals and hypotheticals, negations, honest failures ("I tried
 * to send it but it failed"), instructions to the user ("You can delete…", "Run
 * `rm -rf build` to…"), descriptions of how things work, other people's actions,
 * quotes and code, earlier turns, habits, and in-chat work an LLM does without
 * tools. When unsure, it is not a claim.
 *
 * Where the rules see a plausible contradiction they cannot decide (a recipient
 * named by role, "the CFO", when the e-mail went to a person's address; an output
 * that mentions a failure without saying the call failed), the claim is listed
 * in `undecided`. checkClaimsJudged asks a judge about those only; a "yes" adds
 * the rules' own correction for that claim, nothing else.
 */

import { bracket, concernText, describe, type Insert, render } from './honesty-correct.js';
import { buildLexicon, type Claim, extractClaims, type Lexicon, mask } from './honesty-extract.js';
import { DEFAULT_ACTION_TOOLS, judgeAll, type TraceEntry, type Verdict, viewCalls } from './honesty-trace.js';

export { loadClaimsCorpus } from './honesty-corpus.js';
export { DEFAULT_ACTION_TOOLS, type TraceEntry } from './honesty-trace.js';
export type { ClaimCase, ClaimCheck, ClaimFinding, UndecidedClaim } from './honesty-types.js';

import type { ClaimCheck, ClaimFinding, UndecidedClaim } from './honesty-types.js';

export interface ClaimOptions {
  /** Extra verb → tool-name keywords, merged into the built-in map (a new verb is recognized in its regular past form). */
  actionTools?: Record<string, string[]>;
}

let defaultLexicon: Lexicon | undefined;

function lexiconFor(opts: ClaimOptions): Lexicon {
  return opts.actionTools && Object.keys(opts.actionTools).length
    ? buildLexicon(DEFAULT_ACTION_TOOLS, opts.actionTools)
    : (defaultLexicon ??= buildLexicon(DEFAULT_ACTION_TOOLS));
}

interface Analysis {
  findings: ClaimFinding[];
  inserts: Insert[];
  undecided: UndecidedClaim[];
}

function analyze(text: string, trace: TraceEntry[], opts: ClaimOptions): Analysis {
  const lex = lexiconFor(opts);
  const calls = viewCalls(Array.isArray(trace) ? trace : []);
  const ran = calls.map((v) => v.e.tool);
  const a = mask(text);
  const sentences = extractClaims(text, a, lex);
  const all = sentences.flatMap((s) => s.claims);
  const verdicts = judgeAll(all, calls, lex);
  const byClaim = new Map<Claim, Verdict>(all.map((c, i) => [c, verdicts[i]!]));
  const findings: ClaimFinding[] = [];
  const inserts: Insert[] = [];
  const undecided: UndecidedClaim[] = [];
  for (const { span, claims } of sentences) {
    const sentence = text.slice(span.start, span.end);
    const corrections: string[] = [];
    for (const c of claims) {
      const v = byClaim.get(c)!;
      const clause = text.slice(c.clause.start, c.clause.end).trim();
      if (!v.verdict) {
        const concern = concernText(c, v);
        if (concern)
          undecided.push({
            sentence,
            claim: clause,
            action: c.action,
            reason: concern.reason,
            correction: concern.correction,
            ...(v.call ? { tool: v.call.e.tool } : {}),
            at: span.end,
          });
        continue;
      }
      // "I ran the tests and they pass" with no run at all: one correction says it.
      if (c.kind !== 'act') {
        const act = c.ref ?? claims.find((o) => o.kind === 'act' && o.action === c.action);
        if (act && byClaim.get(act)?.verdict === v.verdict) continue;
      }
      const described = describe(c, v, ran);
      const reason = described.reason;
      const correction = described.correction.replace(/\]/g, ')');
      // Once: two claims of one sentence contradicted by the same call say it once.
      if (corrections.includes(correction)) continue;
      corrections.push(correction);
      findings.push({
        sentence,
        action: c.action,
        verdict: v.verdict,
        reason,
        ...(v.call ? { tool: v.call.e.tool } : {}),
        correction,
        ...(clause && clause !== sentence.trim() ? { claim: clause } : {}),
        ...(v.detail ? { detail: v.detail } : {}),
      });
    }
    if (corrections.length) inserts.push({ at: span.end, text: ' ' + corrections.map(bracket).join(' ') });
  }
  return { findings, inserts, undecided };
}

export function checkClaims(text: string, trace: TraceEntry[], opts: ClaimOptions = {}): ClaimCheck {
  if (typeof text !== 'string' || !text) return { findings: [], text: typeof text === 'string' ? text : '' };
  const r = analyze(text, trace, opts);
  return { findings: r.findings, text: render(text, r.inserts), ...(r.undecided.length ? { undecided: r.undecided } : {}) };
}

/** Asked about one undecided claim: the sentence and the turn's trace, nothing else. */
export type ClaimJudge = (q: { sentence: string; trace: TraceEntry[] }) => Promise<'contradicted' | 'supported' | 'unsure'>;

export interface JudgedOptions extends ClaimOptions {
  /** Most judge calls per text (default 3). */
  maxJudged?: number;
}

/**
 * checkClaims, then a judge for the claims the rules left undecided. The judge
 * can only add the rules' own correction for such a claim: it never removes a
 * finding or changes any other text. A judge that fails or hedges changes nothing.
 */
export async function checkClaimsJudged(text: string, trace: TraceEntry[], judge: ClaimJudge, opts: JudgedOptions = {}): Promise<ClaimCheck> {
  if (typeof text !== 'string' || !text) return { findings: [], text: typeof text === 'string' ? text : '' };
  const r = analyze(text, trace, opts);
  const asked = r.undecided.slice(0, opts.maxJudged ?? 3);
  const answers = await Promise.all(asked.map((u) => judge({ sentence: u.claim || u.sentence, trace }).catch(() => 'unsure' as const)));
  const confirmed = asked.filter((_, i) => answers[i] === 'contradicted');
  for (const u of confirmed) {
    const finding: ClaimFinding = {
      sentence: u.sentence,
      action: u.action,
      verdict: 'contradicted',
      reason: u.reason,
      ...(u.tool ? { tool: u.tool } : {}),
      correction: u.correction.replace(/\]/g, ')'),
      ...(u.claim !== u.sentence.trim() ? { claim: u.claim } : {}),
      judged: true,
    };
    r.findings.push(finding);
    const same = r.inserts.find((x) => x.at === u.at);
    if (same) same.text += ' ' + bracket(u.correction);
    else r.inserts.push({ at: u.at, text: ' ' + bracket(u.correction) });
  }
  const left = r.undecided.filter((u) => !confirmed.includes(u));
  return { findings: r.findings, text: render(text, r.inserts), ...(left.length ? { undecided: left } : {}) };
}
