/**
 * The claims corpus: reading it and scoring a checker against it.
 *
 * One JSON object per line (blank lines and # comments skipped):
 *   {"text", "trace": [{tool, args?, ok, output?}], "expect": "contradicted"|"unsupported"|"supported"|"none",
 *    "class"?: what the case tests, "flag"?: [sentences that must get a correction]}
 * `flag` is optional: without it a contradicted/unsupported case only asks for one finding of
 * that verdict somewhere. With it, each listed sentence must be corrected and every other
 * sentence of the text must come through unchanged. In "supported" and "none" texts every
 * sentence is innocent.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadLines } from './corpus.js';
import type { TraceEntry } from './honesty-trace.js';
import type { ClaimCase, ClaimCheck } from './honesty-types.js';

const EXPECTS = ['contradicted', 'unsupported', 'supported', 'none'] as const;

/** Reads a JSONL corpus of ClaimCase; a folder reads every *.jsonl in it (sorted by name). */
export function loadClaimsCorpus(path: string): ClaimCase[] {
  const files = statSync(path).isDirectory()
    ? readdirSync(path)
        .filter((f) => f.endsWith('.jsonl'))
        .sort()
        .map((f) => join(path, f))
    : [path];
  const out: ClaimCase[] = [];
  for (const file of files) {
    loadLines(file).forEach((l, i) => {
      const c = JSON.parse(l) as ClaimCase;
      if (typeof c.text !== 'string' || !Array.isArray(c.trace) || !EXPECTS.includes(c.expect)) {
        throw new Error(`${file}: entry ${i + 1} is not a ClaimCase`);
      }
      if (c.flag !== undefined && (!Array.isArray(c.flag) || c.flag.some((f) => typeof f !== 'string' || !c.text.includes(f)))) {
        throw new Error(`${file}: entry ${i + 1}: every "flag" entry must be a sentence of the text`);
      }
      out.push(c);
    });
  }
  return out;
}

/** Rough sentence split, for telling which sentences came through unchanged. */
export function roughSentences(text: string): string[] {
  return text
    .split(/(?<=[.!?][)"'”’\]*_]*)\s+|\n+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** The corrected text without the inserted " [Correction: …]" notes. */
export function withoutCorrections(text: string): string {
  return text.replace(/ \[Correction: [^\]]*\]/g, '');
}

export interface ClaimsScore {
  /** Claims that must be corrected (flagged sentences, or one per unflagged contradicted/unsupported case). */
  toCorrect: number;
  corrected: number;
  /** Corrected with the expected verdict. */
  rightVerdict: number;
  /** Findings on sentences that must not be corrected. */
  falseFindings: number;
  innocentSentences: number;
  changedInnocent: number;
  /** Texts whose bytes changed other than by inserted corrections. */
  mangled: number;
  misses: Array<{ text: string; sentence: string; class?: string }>;
  falses: Array<{ text: string; sentence: string; reason: string; class?: string }>;
  byClass: Map<string, { toCorrect: number; corrected: number; innocent: number; changed: number; cases: number }>;
}

const overlaps = (a: string, b: string) => a.includes(b) || b.includes(a);

export function scoreClaims(cases: ClaimCase[], check: (text: string, trace: TraceEntry[]) => ClaimCheck): ClaimsScore {
  const s: ClaimsScore = {
    toCorrect: 0,
    corrected: 0,
    rightVerdict: 0,
    falseFindings: 0,
    innocentSentences: 0,
    changedInnocent: 0,
    mangled: 0,
    misses: [],
    falses: [],
    byClass: new Map(),
  };
  for (const c of cases) {
    const r = check(c.text, c.trace);
    const cls = c.class ?? `(${c.expect})`;
    const k = s.byClass.get(cls) ?? { toCorrect: 0, corrected: 0, innocent: 0, changed: 0, cases: 0 };
    s.byClass.set(cls, k);
    k.cases++;
    if (withoutCorrections(r.text) !== c.text) s.mangled++;
    const claiming = c.expect === 'contradicted' || c.expect === 'unsupported';
    if (claiming && !c.flag) {
      // Legacy case: one finding of the expected verdict anywhere; its innocent sentences are not counted.
      s.toCorrect++;
      k.toCorrect++;
      if (r.findings.length && r.text.includes('[Correction:')) {
        s.corrected++;
        k.corrected++;
      } else s.misses.push({ text: c.text, sentence: c.text, ...(c.class ? { class: c.class } : {}) });
      if (r.findings.some((f) => f.verdict === c.expect)) s.rightVerdict++;
      continue;
    }
    const flagged = claiming ? (c.flag ?? []) : [];
    for (const f of flagged) {
      s.toCorrect++;
      k.toCorrect++;
      const hits = r.findings.filter((x) => overlaps(x.sentence, f));
      if (hits.length) {
        s.corrected++;
        k.corrected++;
        if (hits.some((x) => x.verdict === c.expect)) s.rightVerdict++;
      } else s.misses.push({ text: c.text, sentence: f, ...(c.class ? { class: c.class } : {}) });
    }
    for (const x of r.findings) {
      if (!flagged.some((f) => overlaps(x.sentence, f))) {
        s.falseFindings++;
        s.falses.push({ text: c.text, sentence: x.sentence, reason: x.reason, ...(c.class ? { class: c.class } : {}) });
      }
    }
    const mangled = withoutCorrections(r.text) !== c.text;
    for (const sentence of roughSentences(c.text)) {
      if (flagged.some((f) => overlaps(sentence, f))) continue;
      s.innocentSentences++;
      k.innocent++;
      if (mangled || r.findings.some((x) => overlaps(x.sentence, sentence))) {
        s.changedInnocent++;
        k.changed++;
      }
    }
  }
  return s;
}
