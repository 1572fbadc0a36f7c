import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promptsDir } from './paths.js';
import type { AgentConfig } from './config.js';

/**
 * Composes the system prompt from slots: identity, rules, a per-channel hint,
 * the agent's own instructions, and a memory block. Files are read once.
 */
export class PromptComposer {
  private readonly cache = new Map<string, string>();

  constructor(
    private readonly dir = promptsDir,
    /** The playbook summaries (skills), listed after the rules. */
    private readonly skillsBlock = '',
  ) {}

  private file(rel: string): string {
    let v = this.cache.get(rel);
    if (v === undefined) {
      const p = join(this.dir, rel);
      v = existsSync(p) ? readFileSync(p, 'utf8').trim() : '';
      this.cache.set(rel, v);
    }
    return v;
  }

  compose(opts: { channel: string; agent: AgentConfig; memory?: string[]; extraSystem?: string[] }): string {
    const parts = [this.file('identity.md'), this.file('rules.md'), this.file(join('channels', `${opts.channel}.md`)), this.skillsBlock];
    if (opts.agent.instructions) parts.push(opts.agent.instructions.trim());
    for (const s of opts.extraSystem ?? []) if (s.trim()) parts.push(s.trim());
    if (opts.memory?.length) parts.push(['Memory (notes kept from earlier conversations):', ...opts.memory.map((m) => `- ${m}`)].join('\n'));
    return parts.filter(Boolean).join('\n\n');
  }
}
