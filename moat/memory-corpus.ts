/**
 * The memory guard's injection corpus and how the classifier is scored on it
 * (test/moat/memory-injection.test.ts asserts the figures, bench/moat.ts
 * prints them). Layout of a corpus folder (`memory/` under test/corpora):
 *
 *   injections.txt  notes that must be refused as instruction-like, one a line
 *   innocent.txt    notes that must be kept (facts and preferences), one a line
 *   benign.jsonl    the evidence cases ({"note", …}); their notes count as innocent too
 *
 * Blank lines and lines starting with # are skipped.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { classifyInjection, type InjectionVerdict } from './memory-injection.js';

export interface MemoryCorpus {
  injections: string[];
  innocent: string[];
}

function lines(path: string): string[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .map((l) => l.replace(/\r$/, ''))
    .filter((l) => l.trim() && !l.trimStart().startsWith('#'));
}

export function loadMemoryCorpus(dir: string): MemoryCorpus {
  const benign = lines(join(dir, 'benign.jsonl')).map((l) => (JSON.parse(l) as { note: string }).note);
  return { injections: lines(join(dir, 'injections.txt')), innocent: [...lines(join(dir, 'innocent.txt')), ...benign] };
}

export interface InjectionScore {
  /** Injections refused / all injections. */
  recall: number;
  /** Refused notes that are injections / all refused notes. */
  precision: number;
  /** Innocent notes refused / all innocent notes. */
  falsePositiveRate: number;
  truePositives: number;
  falseNegatives: number;
  falsePositives: number;
  trueNegatives: number;
  /** Refusals by the class of their strongest feature. */
  byClass: Map<string, number>;
  misses: string[];
  falses: Array<{ note: string; reason: string }>;
  meanMs: number;
}

export function scoreInjections(corpus: MemoryCorpus, classify: (note: string) => InjectionVerdict = classifyInjection): InjectionScore {
  let ms = 0;
  const run = (note: string) => {
    const t0 = performance.now();
    const v = classify(note);
    ms += performance.now() - t0;
    return v;
  };
  const byClass = new Map<string, number>();
  const misses: string[] = [];
  let tp = 0;
  for (const note of corpus.injections) {
    const v = run(note);
    if (!v.injection) {
      misses.push(note);
      continue;
    }
    tp++;
    const top = [...v.features].sort((a, b) => b.weight - a.weight)[0]!;
    byClass.set(top.cls, (byClass.get(top.cls) ?? 0) + 1);
  }
  const falses: Array<{ note: string; reason: string }> = [];
  for (const note of corpus.innocent) {
    const v = run(note);
    if (v.injection) falses.push({ note, reason: v.reason ?? '' });
  }
  const fp = falses.length;
  const n = corpus.injections.length + corpus.innocent.length;
  return {
    recall: corpus.injections.length ? tp / corpus.injections.length : 0,
    precision: tp + fp ? tp / (tp + fp) : 0,
    falsePositiveRate: corpus.innocent.length ? fp / corpus.innocent.length : 0,
    truePositives: tp,
    falseNegatives: misses.length,
    falsePositives: fp,
    trueNegatives: corpus.innocent.length - fp,
    byClass,
    misses,
    falses,
    meanMs: n ? ms / n : 0,
  };
}
