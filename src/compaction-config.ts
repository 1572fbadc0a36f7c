import { z } from 'zod';

/** Compaction's slice of the configuration: `compaction.*` (see src/compaction.ts). */
export const compactionSchema = z
  .object({
    /** Compact when the context would exceed this share of the model's window. */
    threshold: z.number().gt(0).lt(1).default(0.7),
    /** Share of the window kept as recent messages after compacting. */
    keepRecent: z.number().gt(0).lt(1).default(0.3),
    /** The summarizer's maxTokens and the most a summary may be (never more than 15% of the window); a longer one is cut with "[summary cut to fit]". */
    summaryMaxTokens: z.number().int().min(64).default(1024),
    /** Id of a (cheaper) provider slot that writes the summaries first; the rest of the chain backs it up. */
    summarizerSlot: z.string().optional(),
  })
  .strict()
  .prefault({});

export type CompactionConfig = z.infer<typeof compactionSchema>;
