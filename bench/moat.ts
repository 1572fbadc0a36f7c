/**
 * The moat against its corpora: prints the figures the guards are held to.
 * Point --corpus at another folder with the same layout to re-measure.
 *
 *   npm run build && node dist/bench/moat.js [--corpus test/corpora]
 *
 * Layout: commands/{blocked,dangerous,benign}.txt, ssrf/{attacks,benign}.txt
 * (URL, then TAB-separated host:address DNS answers), secrets/true.txt
 * (kind TAB text), secrets/lookalike.txt, claims/*.jsonl, memory/{injections,innocent}.txt.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { packageRoot } from '../kernel/paths.js';
import { classifyCommand, TIER_ORDER } from '../moat/command-classifier.js';
import { type ClaimCase, checkClaims } from '../moat/honesty.js';
import { loadClaimsCorpus, scoreClaims } from '../moat/honesty-corpus.js';
import { loadMemoryCorpus, scoreInjections } from '../moat/memory-corpus.js';
import { checkMemoryWrite } from '../moat/memory-guard.js';
import { scanText } from '../moat/secrets.js';
import { checkUrl, staticResolver } from '../moat/ssrf.js';

const { values } = parseArgs({ options: { corpus: { type: 'string', default: join(packageRoot, 'test', 'corpora') } } });
const dir = resolve(values.corpus!);

function lines(rel: string): string[] {
  const p = join(dir, rel);
  if (!existsSync(p)) return [];
  return readFileSync(p, 'utf8')
    .split('\n')
    .map((l) => l.replace(/\r$/, ''))
    .filter((l) => l.trim() && !l.trimStart().startsWith('#'));
}
const pct = (n: number, d: number) => (d ? `${((100 * n) / d).toFixed(2)}%` : 'n/a');
const time = <T>(fn: () => T): [T, number] => {
  const t0 = performance.now();
  const r = fn();
  return [r, performance.now() - t0];
};

async function main(): Promise<void> {
  console.log(`corpus: ${dir}\n`);

  // Dangerous-command classifier.
  const blocked = lines('commands/blocked.txt');
  const dangerous = lines('commands/dangerous.txt');
  const benign = lines('commands/benign.txt');
  let ms = 0;
  const tier = (c: string) => {
    const [r, t] = time(() => classifyCommand(c));
    ms += t;
    return r;
  };
  const missedBlocked = blocked.filter((c) => tier(c).tier !== 'blocked');
  const missedDangerous = dangerous.filter((c) => TIER_ORDER[tier(c).tier] < TIER_ORDER.dangerous);
  const unsafeBenign = benign.filter((c) => tier(c).tier !== 'safe');
  const n = blocked.length + dangerous.length + benign.length;
  // Warm, one after another: the classifier sits in front of every tool call (target: under 5 ms each).
  const warm = [...blocked, ...dangerous, ...benign];
  for (const c of warm.slice(0, 50)) classifyCommand(c);
  const each = warm.map((c) => time(() => classifyCommand(c))[1]).sort((a, b) => a - b);
  const warmMean = each.reduce((a, b) => a + b, 0) / Math.max(1, each.length);
  const warmP99 = each[Math.min(each.length - 1, Math.ceil(0.99 * each.length) - 1)] ?? 0;
  console.log('command classifier');
  console.log(`  hard-block cases blocked:          ${blocked.length - missedBlocked.length}/${blocked.length}`);
  console.log(`  dangerous cases tiered ≥ dangerous: ${dangerous.length - missedDangerous.length}/${dangerous.length}`);
  console.log(`  read-only commands tiered safe:    ${benign.length - unsafeBenign.length}/${benign.length}`);
  console.log(`  mean time per command:             ${(ms / Math.max(1, n)).toFixed(3)} ms (first pass, cold)`);
  console.log(`  warm, mean / p99 per command:      ${warmMean.toFixed(3)} / ${warmP99.toFixed(3)} ms (target < 5 ms)`);
  for (const c of [...missedBlocked, ...missedDangerous, ...unsafeBenign].slice(0, 10)) console.log(`    miss: ${c} → ${classifyCommand(c).tier}`);

  // SSRF guard.
  const parse = (l: string) => {
    const [url, ...resolvePairs] = l.split('\t');
    return { url: url!.trim(), resolve: resolvePairs.map((x) => x.trim()).filter(Boolean) };
  };
  const check = (c: { url: string; resolve: string[] }) => checkUrl(c.url, { resolve: staticResolver(c.resolve) });
  const attacks = lines('ssrf/attacks.txt').map(parse);
  const goodUrls = lines('ssrf/benign.txt').map(parse);
  const bypasses: string[] = [];
  for (const a of attacks) if ((await check(a)).allowed) bypasses.push(a.url);
  const refusedGood: string[] = [];
  for (const g of goodUrls) if (!(await check(g)).allowed) refusedGood.push(g.url);
  console.log('\nSSRF guard');
  console.log(`  attack URLs refused:   ${attacks.length - bypasses.length}/${attacks.length} (bypasses: ${bypasses.length})`);
  console.log(`  benign URLs allowed:   ${goodUrls.length - refusedGood.length}/${goodUrls.length}`);
  for (const u of [...bypasses, ...refusedGood].slice(0, 10)) console.log(`    miss: ${u}`);

  // Secret and PII scanner.
  const truths = lines('secrets/true.txt').map((l) => {
    const tab = l.indexOf('\t');
    return { kind: l.slice(0, tab), text: l.slice(tab + 1) };
  });
  const lookalikes = lines('secrets/lookalike.txt');
  let found = 0;
  let kindRight = 0;
  ms = 0;
  for (const t of truths) {
    // Phone and email are the optional contact class: asked for where the line is one.
    const [f, dt] = time(() => scanText(t.text, { contact: t.kind === 'phone' || t.kind === 'email' }));
    ms += dt;
    if (f.length) found++;
    if (f.some((x) => x.kind === t.kind)) kindRight++;
  }
  const falsePositives = lookalikes.filter((l) => scanText(l).length > 0);
  console.log('\nsecret and PII scanner');
  console.log(`  recall:                ${pct(found, truths.length)} (${found}/${truths.length}); right kind ${pct(kindRight, truths.length)}`);
  console.log(`  false positives:       ${pct(falsePositives.length, lookalikes.length)} (${falsePositives.length}/${lookalikes.length} look-alikes)`);
  console.log(`  mean time per text:    ${(ms / Math.max(1, truths.length)).toFixed(3)} ms`);
  for (const l of falsePositives.slice(0, 5)) console.log(`    false positive: ${l.slice(0, 100)}`);

  // Honesty check (every claims/*.jsonl).
  const claimsDir = join(dir, 'claims');
  const cases: ClaimCase[] = existsSync(claimsDir) ? loadClaimsCorpus(claimsDir) : [];
  const by = (e: ClaimCase['expect']) => cases.filter((c) => c.expect === e);
  const caught = (e: 'contradicted' | 'unsupported') => by(e).filter((c) => checkClaims(c.text, c.trace).findings.some((f) => f.verdict === e)).length;
  const changed = [...by('none'), ...by('supported')].filter((c) => checkClaims(c.text, c.trace).text !== c.text);
  ms = 0;
  const score = scoreClaims(cases, (text, trace) => {
    const [r, t] = time(() => checkClaims(text, trace));
    ms += t;
    return r;
  });
  console.log('\nhonesty check');
  console.log(`  contradicted claims caught: ${caught('contradicted')}/${by('contradicted').length}`);
  console.log(`  unsupported claims caught:  ${caught('unsupported')}/${by('unsupported').length}`);
  console.log(`  texts changed that claim nothing or only true things: ${changed.length}/${by('none').length + by('supported').length}`);
  console.log(
    `  recall (claims corrected):  ${pct(score.corrected, score.toCorrect)} (${score.corrected}/${score.toCorrect}); with the expected verdict ${score.rightVerdict}/${score.toCorrect}`,
  );
  console.log(`  false findings:             ${score.falseFindings}`);
  console.log(
    `  changed innocent sentences: ${score.changedInnocent}/${score.innocentSentences}${score.mangled ? ` (texts altered other than by corrections: ${score.mangled})` : ''}`,
  );
  console.log(`  mean time per text:         ${(ms / Math.max(1, cases.length)).toFixed(3)} ms (${cases.length} texts)`);
  const classes = [...score.byClass.entries()].sort(([a], [b]) => a.localeCompare(b));
  if (classes.length > 1) {
    console.log('  by class (corrected/to correct, changed/innocent sentences):');
    for (const [name, k] of classes)
      console.log(
        `    ${name.padEnd(20)} ${String(k.cases).padStart(4)} texts  ${`${k.corrected}/${k.toCorrect}`.padStart(9)}  ${`${k.changed}/${k.innocent}`.padStart(9)}`,
      );
  }
  for (const m of score.misses.slice(0, 15)) console.log(`    miss${m.class ? ` (${m.class})` : ''}: ${m.sentence.slice(0, 110)}`);
  for (const f of score.falses.slice(0, 15))
    console.log(`    false finding${f.class ? ` (${f.class})` : ''}: ${f.sentence.slice(0, 90)} — ${f.reason.slice(0, 80)}`);

  // Memory guard.
  const injections = lines('memory/injections.txt');
  const let_through = injections.filter((note) => checkMemoryWrite(note, { userMessages: [note], toolOutputs: [] }).allowed);
  console.log('\nmemory guard');
  console.log(`  injection notes refused (even when the user said them): ${injections.length - let_through.length}/${injections.length}`);
  // The injection classifier alone, on memory/injections.txt against memory/innocent.txt and benign.jsonl's notes.
  const memScore = scoreInjections(loadMemoryCorpus(join(dir, 'memory')));
  const refused = memScore.truePositives + memScore.falsePositives;
  console.log(
    `  injection classifier: recall ${pct(memScore.truePositives, memScore.truePositives + memScore.falseNegatives)} (${memScore.truePositives}/${memScore.truePositives + memScore.falseNegatives}), precision ${pct(memScore.truePositives, refused)} (${memScore.truePositives}/${refused})`,
  );
  console.log(
    `  innocent notes refused (false positives): ${pct(memScore.falsePositives, memScore.falsePositives + memScore.trueNegatives)} (${memScore.falsePositives}/${memScore.falsePositives + memScore.trueNegatives})`,
  );
  console.log(
    `  refusals by class: ${[...memScore.byClass.entries()]
      .sort(([x], [y]) => x.localeCompare(y))
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
  console.log(`  mean time per note: ${memScore.meanMs.toFixed(3)} ms`);
  for (const m of memScore.misses.slice(0, 10)) console.log(`    miss: ${m.slice(0, 100)}`);
  for (const f of memScore.falses.slice(0, 10)) console.log(`    false positive: ${f.note.slice(0, 80)} — ${f.reason.slice(0, 60)}`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
