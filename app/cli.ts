import { parseArgs } from 'node:util';
import { errorCode } from '../kernel/errors.js';
import { loadEnvFile } from './env-file.js';

/*
 * The CLI's entry: it parses the command line and imports only the verb it runs (each verb's module
 * is loaded with import() when called), so that `--version`, `moat classify` or `approvals list`
 * never load the gateway, the channels' SDKs or the providers (bench/cli.ts measures it).
 */

const USAGE = `usage: switchboard <command> [--json]

commands:
  init      set up: write a configuration file and .env (keys generated), test the provider, print each channel's
            platform setup (interactive; --yes with flags for scripts; see switchboard init --help)
  start     run everything in one process (embedded queue and PGlite when REDIS_URL/DATABASE_URL are unset)
  ingress   run the channel listeners and the HTTP server only (needs REDIS_URL and DATABASE_URL)
  worker    run turn workers only (needs REDIS_URL and DATABASE_URL)
  status    a running gateway's health: readiness checks, queue, pending approvals (SWITCHBOARD_URL, operator key)
  chat      a terminal chat with a running gateway (SWITCHBOARD_URL, SWITCHBOARD_API_KEY; inline approvals with SWITCHBOARD_OPERATOR_KEY)
  webhooks  list | add ID URL --secret-env VAR --events E1,E2 | dead-letters   outbound event subscribers
  schedule  add --conversation ID (--cron EXPR | --at TIME) --tz TZ --prompt TEXT | ls | rm ID   scheduled messages (operator key)
  takeover  list | take CONV | say CONV TEXT | handback CONV [--note TEXT]   human takeover of a conversation (operator key)
  migrate   apply database migrations
  approvals list | show CODE | approve CODE [--always [--scope S] [--vary N]] | deny CODE | rules [delete ID]
            answer approvals and manage "always allow" rules through the running gateway
            (SWITCHBOARD_URL, SWITCHBOARD_OPERATOR_KEY)
  access list | approve CODE | allow CHANNEL SENDER | deny CHANNEL SENDER   pairing and allowlists (operator key)
  memory list | set NOTE | forget ID   durable notes, through the running gateway (operator key)
  export    --conversation ID | --sender CHANNEL:ID | --all [--format json|markdown] [--out FILE]   transcripts (operator key)
  erase     --conversation ID | --sender CHANNEL:ID --yes   delete a conversation or a sender's data, audited (operator key)
  audit     verify [--head HASH] | export [--after SEQ]   the hash-chained audit ledger (opens the database itself)
  moat      the guards on their own: classify | check-url | scan | claims (see switchboard moat --help)
  doctor    check the configuration, connections and provider slots (with cooldowns); print the effective configuration
            --probe: also send one tiny request to each provider slot
  version   print the version (also --version)

options:
  --json     machine-readable output (migrate, doctor, status, version)
  --create   migrate: create the database DATABASE_URL names when it does not exist
  --debug    stack traces with failures (or SWITCHBOARD_DEBUG=1)
  --version  print the version
  -h, --help`;

type Verb = (argv: string[]) => Promise<number>;

/** The verbs with their own options: each module is imported only when its verb runs. */
const OWN_OPTIONS: Record<string, () => Promise<Verb>> = {
  moat: async () => (await import('./cli/moat.js')).runMoat,
  approvals: async () => (await import('./cli/approvals.js')).runApprovals,
  memory: async () => (await import('./cli/memory.js')).runMemory,
  chat: async () => (await import('./cli/chat.js')).runChat,
  webhooks: async () => (await import('./cli/webhooks.js')).runWebhooks,
  schedule: async () => (await import('./cli/schedule.js')).runSchedule,
  takeover: async () => (await import('./cli/takeover.js')).runTakeover,
  access: async () => (await import('./cli/access.js')).runAccess,
  status: async () => (await import('./cli/status.js')).runStatus,
  init: async () => (await import('./cli/init.js')).runInit,
  audit: async () => (await import('./cli/audit.js')).runAudit,
  export: async () => (await import('./cli/data-rights.js')).runExport,
  erase: async () => (await import('./cli/data-rights.js')).runErase,
};

export async function main(argv: string[]): Promise<number> {
  // --debug (or SWITCHBOARD_DEBUG=1), anywhere on the line: stack traces with failures (bin/switchboard.js, reportFailure).
  if (argv.includes('--debug')) {
    process.env.SWITCHBOARD_DEBUG = '1';
    argv = argv.filter((a) => a !== '--debug');
  }
  // `.env` (what `switchboard init` writes) before any verb reads the environment; init writes it instead.
  if (argv[0] !== 'init') {
    try {
      loadEnvFile();
    } catch (err) {
      return reportFailure(err);
    }
  }
  // `init --help` prints its usage without loading the wizard (the channels' setups, the provider probe).
  if (argv[0] === 'init' && argv.slice(1).some((a) => a === '--help' || a === '-h')) {
    process.stdout.write(`${(await import('./cli/init-usage.js')).INIT_USAGE}\n`);
    return 0;
  }
  const own = argv[0] ? OWN_OPTIONS[argv[0]] : undefined;
  if (own) return (await own())(argv.slice(1));
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        json: { type: 'boolean' },
        probe: { type: 'boolean' },
        create: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
      },
    });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const [command] = parsed.positionals;
  const json = parsed.values.json === true;
  if (parsed.values.version || command === 'version') return (await import('./cli/version.js')).runVersion({ json });
  if (parsed.values.help || !command) {
    process.stdout.write(USAGE + '\n');
    return command || parsed.values.help ? 0 : 2;
  }
  try {
    switch (command) {
      case 'start':
        return await (await import('./cli/serve.js')).serve({ ingress: true, worker: true });
      case 'ingress':
        return await (await import('./cli/serve.js')).serve({ ingress: true, worker: false });
      case 'worker':
        return await (await import('./cli/serve.js')).serve({ ingress: false, worker: true });
      case 'migrate':
        return await (await import('./cli/migrate.js')).runMigrate({ json, create: parsed.values.create === true });
      case 'doctor':
        return await (await import('./cli/doctor.js')).runDoctor({ json, probe: parsed.values.probe === true });
      default:
        process.stderr.write(`unknown command: ${command}\n${USAGE}\n`);
        return 2;
    }
  } catch (err) {
    return reportFailure(err);
  }
}

/**
 * Exit codes: 2 for configuration (ConfigError), 1 for anything else; one line on stderr, the stack with --debug.
 * Known failures are told by their stable code (kernel/errors.ts), so this module imports neither the config nor the infra.
 */
export function reportFailure(err: unknown): number {
  const debug = process.env.SWITCHBOARD_DEBUG === '1' || process.env.SWITCHBOARD_DEBUG === 'true';
  const code = errorCode(err);
  const known = code === 'config_invalid' || code === 'runtime_failure';
  const e = err instanceof Error ? err : new Error(String(err));
  if (debug) {
    process.stderr.write(`switchboard: ${e.stack ?? e.message}\n`);
    if (e.cause instanceof Error && e.cause.stack) process.stderr.write(`caused by: ${e.cause.stack}\n`);
  } else {
    process.stderr.write(known ? `switchboard: ${e.message}\n` : `switchboard: ${e.message.split('\n')[0]} (run with --debug for the stack trace)\n`);
  }
  return code === 'config_invalid' ? 2 : 1;
}
