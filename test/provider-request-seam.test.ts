/**
 * src/provider-request.ts is the only place that sends a request to a model
 * provider (issue #19): this test reads the source tree (src/, channels/,
 * tools/, moat/) and fails on any other way out — a call of a chain's
 * stream(), an import of pi-ai's stream/complete functions (or of pi-ai as a
 * namespace), or pi-agent-core's loops and Agent outside src/agent-loop.ts,
 * whose loops must be given the builder-backed streamFn.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../kernel/paths.js';

const ROOTS = ['kernel', 'app', 'src', 'channels', 'adapters', 'tools', 'moat'];
const BUILDER = 'src/provider-request.ts';
const AGENT_LOOP = 'src/agent-loop.ts';

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (/\.(ts|mts|cts|js|mjs|cjs)$/.test(name)) out.push(p);
  }
  return out;
}

/** The code without comments, line numbers kept (string contents are kept: `'http://x'` is not a comment). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' ')).replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

const PI_AI = /^@mariozechner\/pi-ai(\/.*)?$/;
const PI_AGENT = /^@mariozechner\/pi-agent-core(\/.*)?$/;
const LOOPS = new Set(['agentLoop', 'agentLoopContinue', 'runAgentLoop', 'runAgentLoopContinue', 'Agent', 'streamProxy']);

/** Every way out to a provider this file takes, but the builder's own. */
function directCalls(file: string, text: string): string[] {
  const src = code(text);
  const found: string[] = [];
  const line = (i: number) => src.slice(0, i).split('\n').length;
  if (file !== BUILDER) {
    // chain.stream(...), x.stream.call(...), x['stream'](...), const { stream } = chain (a type such as ProviderChain['stream'] is fine)
    for (const m of src.matchAll(
      /(?:\.\s*stream|\[\s*['"`]stream['"`]\s*\])\s*(?:\(|\.\s*(?:call|apply|bind)\b)|\{\s*(?:[\w\s,]*,\s*)?stream\s*(?:,[\w\s,]*)?\}\s*=/g,
    ))
      found.push(`${file}:${line(m.index!)}: ${m[0].trim()}`);
  }
  // Imports: named value imports from pi-ai that send (stream*, complete*), pi-ai as a namespace, dynamic imports.
  for (const m of src.matchAll(/import\s+(type\s+)?([\s\S]*?)\s+from\s+['"]([^'"]+)['"]/g)) {
    const [, typeOnly, clause, mod] = m;
    if (typeOnly) continue;
    const named = /\{([\s\S]*)\}/.exec(clause!)?.[1] ?? '';
    const names = named
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s && !s.startsWith('type '))
      .map((s) => s.split(/\s+as\s+/)[0]!.trim());
    if (PI_AI.test(mod!)) {
      for (const n of names) if (/^(stream|complete)/i.test(n)) found.push(`${file}:${line(m.index!)}: imports ${n} from ${mod}`);
      if (/\*\s+as\s+\w+/.test(clause!) || /^\s*\w+\s*(,|$)/.test(clause!)) found.push(`${file}:${line(m.index!)}: imports ${mod} as a whole`);
    }
    if (PI_AGENT.test(mod!) && file !== AGENT_LOOP) {
      for (const n of names) if (LOOPS.has(n)) found.push(`${file}:${line(m.index!)}: imports ${n} from ${mod} (only ${AGENT_LOOP} runs the loop)`);
      if (/\*\s+as\s+\w+/.test(clause!)) found.push(`${file}:${line(m.index!)}: imports ${mod} as a whole`);
    }
  }
  for (const m of src.matchAll(/(?:import|require)\s*\(\s*['"](@mariozechner\/pi-(?:ai|agent-core)[^'"]*)['"]\s*\)/g))
    found.push(`${file}:${line(m.index!)}: loads ${m[1]} dynamically`);
  if (file === AGENT_LOOP) {
    // The loop's model calls go through the streamFn that calls the builder: every loop call passes it.
    for (const m of src.matchAll(/\b(runAgentLoop|runAgentLoopContinue|agentLoop|agentLoopContinue)\s*\(([^;]*?)\)\s*\)?\s*(?:as|;|\))/g)) {
      if (!/\bstreamFn\s*$/.test(m[2]!.trim())) found.push(`${file}:${line(m.index!)}: ${m[1]} without the builder's streamFn`);
    }
    if (!/sendToProvider\s*\(/.test(src)) found.push(`${file}: the loop's streamFn does not call sendToProvider`);
  }
  return found;
}

describe('one builder sends every provider request', () => {
  it('finds no direct call of a provider chain or of pi-ai outside src/provider-request.ts', () => {
    const files = ROOTS.flatMap((r) => sourceFiles(join(packageRoot, r)));
    expect(files.length).toBeGreaterThan(50);
    const found = files.flatMap((f) => directCalls(relative(packageRoot, f).split('\\').join('/'), readFileSync(f, 'utf8')));
    expect(found).toEqual([]);
  });

  it('the check itself catches the usual ways out', () => {
    const bad = [
      `const s = chain.stream({ messages }, {}, {});`,
      `const s = deps.summarizer\n  .stream(ctx, opts, {});`,
      `judge['stream'](ctx, {}, {});`,
      `const { primary, stream } = chain;`,
      `import { completeSimple } from '@mariozechner/pi-ai';`,
      `import { streamSimple as go, type Context } from '@mariozechner/pi-ai';`,
      `import * as ai from '@mariozechner/pi-ai';`,
      `const ai = await import('@mariozechner/pi-ai');`,
      `import { runAgentLoop } from '@mariozechner/pi-agent-core';`,
    ];
    for (const b of bad) expect(directCalls('src/elsewhere.ts', b), b).not.toEqual([]);
    expect(
      directCalls(
        AGENT_LOOP,
        `import { runAgentLoop } from '@mariozechner/pi-agent-core';\nconst x = (await runAgentLoop(p, c, cfg, emit, signal)) as M[];\nsendToProvider(a, b, c);`,
      ),
    ).not.toEqual([]);
    const fine = [
      `import { createAssistantMessageEventStream, type Context } from '@mariozechner/pi-ai';`,
      `import type { AgentTool } from '@mariozechner/pi-agent-core';`,
      `// chain.stream() is called by the builder only`,
      `const r = createReadStream(path); const u = 'http://x//y';`,
      `type O = Parameters<ProviderChain['stream']>[1];`,
    ];
    for (const f of fine) expect(directCalls('src/elsewhere.ts', f), f).toEqual([]);
  });
});
