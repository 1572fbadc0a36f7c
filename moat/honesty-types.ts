/** The result types of the claims check (moat/honesty.ts), apart so the corpus tools can use them without importing the check. */

import type { DetailIssue, TraceEntry } from './honesty-trace.js';

export interface ClaimFinding {
  sentence: string;
  /** Normalized action class, e.g. 'delete', 'send', 'pay'. */
  action: string;
  verdict: 'contradicted' | 'unsupported';
  reason: string;
  tool?: string;
  /** The words inside the inserted "[Correction: …]". */
  correction?: string;
  /** The clause that makes the claim, when it is not the whole sentence. */
  claim?: string;
  /** The detail the trace contradicts (recipient, path, amount, count, time, value). */
  detail?: DetailIssue;
  /** Added because a judge confirmed what the rules could not decide. */
  judged?: boolean;
}

/** A plausible contradiction the rules cannot decide; a judge may confirm it. */
export interface UndecidedClaim {
  sentence: string;
  claim: string;
  action: string;
  /** What the rules would say if it is a contradiction. */
  reason: string;
  correction: string;
  tool?: string;
  /** Where the correction would go (offset in the text). */
  at: number;
}

export interface ClaimCheck {
  findings: ClaimFinding[];
  /** Corrected text; identical to the input when there are no findings. */
  text: string;
  /** Present when some claims could not be decided by the rules (see checkClaimsJudged). */
  undecided?: UndecidedClaim[];
}

export interface ClaimCase {
  text: string;
  trace: TraceEntry[];
  expect: 'contradicted' | 'unsupported' | 'supported' | 'none';
  /** What the case tests (corpus bookkeeping). */
  class?: string;
  /** The sentences that must get a correction; every other sentence must come through unchanged. */
  flag?: string[];
}
