/**
 * Crash points for the crash tests (test/durable-turns.test.ts): inert unless the
 * environment variable SWITCHBOARD_TEST_FAULT names one, as `<point>` or
 * `<point>:<n>`; then the process SIGKILLs itself the n-th time (default the first)
 * it passes that point, exactly as a worker dying there would. Never set it in production.
 *
 * Points: `tool-started` (journal says started, the tool has not run), `tool-ran`
 * (the tool returned, its result is not journaled), `tool-finished` (journaled),
 * `approval-claimed` (an approved call claimed, not yet started), `before-park`
 * (approvals asked and shown, the turn not yet parked), `approval-created` (an approval row
 * written and audited, not yet shown), `final-kept` (a final answer journaled because closing
 * the turn took long, the turn not closed), `sla-fired` (a request's SLA fired and committed, the user's notice
 * not yet queued: src/handoffs/service.ts), `sla-notice-queued` (that notice queued for delivery, not yet marked sent),
 * `turn-opened` (a one-off message and its turn committed by the accept statement, its drain not yet
 * started: src/ingress/steps/accept.ts).
 */
const spec = process.env.SWITCHBOARD_TEST_FAULT ?? '';
const [armed = '', nth = '1'] = spec.split(':');
let passed = 0;

export type FaultPoint =
  | 'tool-started'
  | 'tool-ran'
  | 'tool-finished'
  | 'approval-claimed'
  | 'approval-created'
  | 'before-park'
  | 'final-kept'
  | 'sla-fired'
  | 'sla-notice-queued'
  | 'turn-opened';

export function faultPoint(point: FaultPoint): void {
  if (armed !== point) return;
  if (++passed === Number(nth)) process.kill(process.pid, 'SIGKILL');
}
