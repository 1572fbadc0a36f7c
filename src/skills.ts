import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { z } from 'zod';
import { promptsDir } from '../kernel/paths.js';
import { type AnyTool, defineTool, ToolError } from '../tools/contract.js';

export interface Skill {
  name: string;
  summary: string;
  body: string;
  source: 'bundled' | 'operator';
}

/**
 * Skill playbooks: markdown files in prompts/skills/ (bundled) and an operator
 * folder (skills.dir). The system prompt lists only their one-line summaries;
 * the model reads a playbook with skill_read when it needs one, so the prompt
 * stays small. An operator playbook with the same name replaces a bundled one.
 */
export function loadSkills(operatorDir?: string): Skill[] {
  const byName = new Map<string, Skill>();
  const read = (dir: string, source: Skill['source']) => {
    if (!existsSync(dir)) return;
    for (const f of readdirSync(dir)
      .filter((x) => x.endsWith('.md'))
      .sort()) {
      const text = readFileSync(join(dir, f), 'utf8');
      const fm = /^---\n([\s\S]*?)\n---\n?/.exec(text);
      const summary = fm ? /^summary:\s*(.+)$/m.exec(fm[1]!)?.[1]?.trim() : undefined;
      const body = fm ? text.slice(fm[0].length) : text;
      const firstLine =
        body
          .split('\n')
          .find((l) => l.trim())
          ?.replace(/^#+\s*/, '')
          .trim() ?? '';
      byName.set(basename(f, '.md'), { name: basename(f, '.md'), summary: summary ?? firstLine, body: body.trim(), source });
    }
  };
  read(join(promptsDir, 'skills'), 'bundled');
  if (operatorDir) read(operatorDir, 'operator');
  return [...byName.values()];
}

/** The system prompt block: names and summaries only. */
export function skillsPromptBlock(skills: Skill[]): string {
  if (!skills.length) return '';
  return ['Playbooks you can read with skill_read when a task matches one:', ...skills.map((s) => `- ${s.name}: ${s.summary}`)].join('\n');
}

export function skillTools(skills: () => Skill[]): AnyTool[] {
  const skill_list = defineTool({
    name: 'skill_list',
    description: 'List the available playbooks (name and one-line summary).',
    effect: 'read',
    schema: z.object({}),
    async execute() {
      const all = skills();
      return all.length ? all.map((s) => `${s.name}: ${s.summary}`).join('\n') : 'no playbooks';
    },
  });
  const skill_read = defineTool({
    name: 'skill_read',
    description: 'Read a playbook by name.',
    effect: 'read',
    schema: z.object({ name: z.string().min(1) }),
    async execute({ name }) {
      const s = skills().find((x) => x.name === name);
      if (!s) throw new ToolError(`no playbook "${name}"; skill_list shows the names`);
      return s.body;
    },
  });
  return [skill_list, skill_read] as AnyTool[];
}
