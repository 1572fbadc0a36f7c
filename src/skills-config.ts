import { z } from 'zod';

/** The playbooks' slice of the configuration: `skills.*` (see src/skills.ts). */
export const skillsSchema = z
  .object({
    /** A folder of operator playbooks (markdown, optional `summary:` front matter), next to the bundled prompts/skills. */
    dir: z.string().optional(),
  })
  .strict()
  .prefault({});

export type SkillsConfig = z.infer<typeof skillsSchema>;
