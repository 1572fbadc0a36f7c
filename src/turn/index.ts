/** The turn: an orchestrator over a job, its dependencies (ports.ts) and one sink (sinks/). */

export type { TurnApprovalStore, TurnApprovals, TurnContext, TurnDeps, TurnJob, TurnOutcome, TurnSink, TurnStore } from './ports.js';
export { NO_PROVIDER_REPLY } from './prepare.js';
export { type RunTurn, runTurn } from './run.js';
