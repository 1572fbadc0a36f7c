import type { Bus } from '../adapters/bus/port.js';
import type { JobQueue } from '../adapters/queue/port.js';
import type { AccessRepository, ApprovalRepository, GatewayStore } from '../adapters/store/ports/index.js';
import type { CooldownStore } from '../kernel/cooldowns.js';
import type { DrainJob } from '../kernel/jobs.js';

/**
 * The infrastructure that readiness, the metrics refresh and the console read,
 * as ports. app/infra.ts opens the implementations; its Infra has all of these,
 * so app/gateway.ts hands it in as it is.
 */
export interface CoreInfra {
  store: GatewayStore;
  approvals: ApprovalRepository;
  access: AccessRepository;
  queue: JobQueue<DrainJob>;
  bus: Bus;
  /** The provider slots' cooldowns: /readyz reads them for provider health. */
  cooldowns: CooldownStore;
}
