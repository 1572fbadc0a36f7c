import { createLogger } from '../../src/log.js';
import { loadCheckedConfig } from '../config-check.js';
import { Gateway, type Roles } from '../gateway.js';
import { installProcessGuard } from '../process-guard.js';

/** `switchboard start | ingress | worker`: runs the gateway's roles until SIGTERM or SIGINT, then drains. */
export async function serve(roles: Roles): Promise<number> {
  // Every problem of the file and the environment at once, as doctor lists them.
  const cfg = await loadCheckedConfig(process.env);
  const log = createLogger(cfg.log.level, { format: cfg.log.format });
  // Errors nothing caught are logged; an uncaught exception closes the gateway and exits 1 (app/process-guard.ts).
  let gw: Gateway | undefined;
  installProcessGuard(log, { shutdown: async () => gw?.close(), shutdownTimeoutMs: cfg.shutdownTimeoutMs });
  gw = await Gateway.start(cfg, roles, log);
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      log.info({ signal }, 'shutting down');
      resolve();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  // A second signal while draining forces the exit.
  const force = () => process.exit(1);
  process.once('SIGTERM', force);
  process.once('SIGINT', force);
  // Stop taking work and let running turns finish, within the deadline; a turn still running
  // then is retried by another worker (its row and inbox claim are durable), so nothing is lost.
  const deadline = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), cfg.shutdownTimeoutMs).unref());
  const outcome = await Promise.race([gw.close().then(() => 'closed' as const), deadline]);
  if (outcome === 'timeout') log.warn({ timeoutMs: cfg.shutdownTimeoutMs }, 'shutdown deadline reached; unfinished turns will be retried');
  else log.info('shut down cleanly');
  return 0;
}
