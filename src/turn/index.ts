/** The turn: an orchestrator over a job, its dependencies (ports.ts) and one sink (sinks/). */
export { runTurn, type RunTurn } from './run.js';
export { NO_PROVIDER_REPLY } from './prepare.js';
export type { TurnApprovals, TurnApprovalStore, TurnContext, TurnDeps, TurnJob, TurnOutcome, TurnSink, TurnStore } from './ports.js';
