import { parseArgs } from 'node:util';
import { migrate } from '../adapters/store/migrate.js';
import { ConfigError, loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { runAccess } from './cli/access.js';
import { runApprovals } from './cli/approvals.js';
import { runChat } from './cli/chat.js';
import { runMemory } from './cli/memory.js';
import { runMoat } from './cli/moat.js';
import { runWebhooks } from './cli/webhooks.js';
import { loadCheckedConfig } from './config-check.js';
import { doctorFromEnv, formatDoctor } from './doctor.js';
import { Gateway, type Roles } from './gateway.js';
import { createDatabaseIfMissing, lockDataDir, openDb, RuntimeFailure } from './infra.js';
import { installProcessGuard } from './process-guard.js';

const USAGE = `usage: switchboard <command> [--json]

commands:
  start     run everything in one process (embedded queue and PGlite when REDIS_URL/DATABASE_URL are unset)
  ingress   run the channel listeners and the HTTP server only (needs REDIS_URL and DATABASE_URL)
  worker    run turn workers only (needs REDIS_URL and DATABASE_URL)
  chat      a terminal chat with a running gateway (SWITCHBOARD_URL, SWITCHBOARD_API_KEY; inline approvals with SWITCHBOARD_OPERATOR_KEY)
  webhooks  list | add ID URL --secret-env VAR --events E1,E2 | dead-letters   outbound event subscribers
  migrate   apply database migrations
  approvals list | show CODE | approve CODE [--always [--scope S] [--vary N]] | deny CODE | rules [delete ID]
            answer approvals and manage "always allow" rules through the running gateway
            (SWITCHBOARD_URL, SWITCHBOARD_OPERATOR_KEY)
  access list | approve CODE | allow CHANNEL SENDER | deny CHANNEL SENDER   pairing and allowlists (operator key)
  memory list | set NOTE | forget ID   durable notes, through the running gateway (operator key)
  moat      the guards on their own: classify | check-url | scan | claims (see switchboard moat --help)
  doctor    check the configuration, connections and provider slots (with cooldowns); print the effective configuration
            --probe: also send one tiny request to each provider slot

options:
  --json    machine-readable output (migrate, doctor)
  --create  migrate: create the database DATABASE_URL names when it does not exist
  --debug   stack traces with failures (or SWITCHBOARD_DEBUG=1)
  -h, --help`;

export async function main(argv: string[]): Promise<number> {
  // --debug (or SWITCHBOARD_DEBUG=1), anywhere on the line: stack traces with failures (bin/switchboard.js, reportFailure).
  if (argv.includes('--debug')) {
    process.env.SWITCHBOARD_DEBUG = '1';
    argv = argv.filter((a) => a !== '--debug');
  }
  // The guards have their own verbs and options.
  if (argv[0] === 'moat') return runMoat(argv.slice(1));
  if (argv[0] === 'approvals') return runApprovals(argv.slice(1));
  if (argv[0] === 'memory') return runMemory(argv.slice(1));
  if (argv[0] === 'chat') return runChat(argv.slice(1));
  if (argv[0] === 'webhooks') return runWebhooks(argv.slice(1));
  if (argv[0] === 'access') return runAccess(argv.slice(1));
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { json: { type: 'boolean' }, probe: { type: 'boolean' }, create: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const [command] = parsed.positionals;
  const json = parsed.values.json === true;
  if (parsed.values.help || !command) {
    process.stdout.write(USAGE + '\n');
    return command || parsed.values.help ? 0 : 2;
  }
  try {
    switch (command) {
      case 'start':
        return await serve({ ingress: true, worker: true });
      case 'ingress':
        return await serve({ ingress: true, worker: false });
      case 'worker':
        return await serve({ ingress: false, worker: true });
      case 'migrate': {
        const cfg = loadConfig();
        // Embedded: the data folder is one process's (a running `start` holds it).
        const lock = cfg.databaseUrl ? undefined : lockDataDir(cfg, 'migrate');
        try {
          if (parsed.values.create && cfg.databaseUrl) await createDatabaseIfMissing(cfg);
          const db = await openDb(cfg);
          try {
            const r = await migrate(db);
            process.stdout.write(json ? JSON.stringify(r) + '\n' : r.applied.length ? `applied: ${r.applied.join(', ')}\n` : 'database is up to date\n');
          } finally {
            await db.close();
          }
        } finally {
          lock?.release();
        }
        return 0;
      }
      case 'doctor': {
        const r = await doctorFromEnv(process.env, { probe: parsed.values.probe === true });
        process.stdout.write(json ? JSON.stringify(r, null, 2) + '\n' : formatDoctor(r) + '\n');
        return r.ok ? 0 : 1;
      }
      default:
        process.stderr.write(`unknown command: ${command}\n${USAGE}\n`);
        return 2;
    }
  } catch (err) {
    return reportFailure(err);
  }
}

/** Exit codes: 2 for configuration (ConfigError), 1 for anything else; one line on stderr, the stack with --debug. */
export function reportFailure(err: unknown): number {
  const debug = process.env.SWITCHBOARD_DEBUG === '1' || process.env.SWITCHBOARD_DEBUG === 'true';
  const known = err instanceof ConfigError || err instanceof RuntimeFailure;
  const e = err instanceof Error ? err : new Error(String(err));
  if (debug) {
    process.stderr.write(`switchboard: ${e.stack ?? e.message}\n`);
    if (e.cause instanceof Error && e.cause.stack) process.stderr.write(`caused by: ${e.cause.stack}\n`);
  } else {
    process.stderr.write(known ? `switchboard: ${e.message}\n` : `switchboard: ${e.message.split('\n')[0]} (run with --debug for the stack trace)\n`);
  }
  return err instanceof ConfigError ? 2 : 1;
}

async function serve(roles: Roles): Promise<number> {
  // Every problem of the file and the environment at once, as doctor lists them.
  const cfg = await loadCheckedConfig(process.env);
  const log = createLogger(cfg.log.level);
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
