import type { Logger } from 'pino';
import { MemoryCooldowns } from '../adapters/cooldowns/memory.js';
import type { DataLock } from '../adapters/db/data-lock.js';
import { DataRightsStore } from '../adapters/store/data-rights.js';
import { HandoffStore } from '../adapters/store/handoffs.js';
import type { IngressOutcomeRepository } from '../adapters/store/ingress-outcomes.js';
import { ScheduleStore } from '../adapters/store/schedules.js';
import { scanText } from '../moat/secrets.js';
import { FallbackChain, type ProviderChain } from '../providers/chain.js';
import { providerStatus } from '../providers/from-env.js';
import type { ProviderStatus } from '../providers/slot.js';
import { AccessControl } from '../src/access.js';
import { registerAccessApi } from '../src/api/access-api.js';
import { registerConsole } from '../src/api/console/api.js';
import { registerDataRightsApi } from '../src/api/data-rights-api.js';
import { registerDeliveryApi } from '../src/api/deliveries-api.js';
import { registerHandoffApi } from '../src/api/handoffs-api.js';
import { registerMcpServer } from '../src/api/mcp-server.js';
import { registerOperatorApi } from '../src/api/operator-api.js';
import { registerScheduleApi } from '../src/api/schedules-api.js';
import { registerWebhookApi } from '../src/api/webhooks-api.js';
import { approvalInfo, approvalRequestText } from '../src/approvals/render.js';
import { ApprovalService } from '../src/approvals/service.js';
import { bindDeliverer } from '../src/channel/deliver.js';
import type { ChannelInstance } from '../src/channel/index.js';
import { CheapVerdict } from '../src/cheap-verdict.js';
import { ConversationCommands } from '../src/commands.js';
import { type Config, ConfigError, configError } from '../src/config.js';
import { HandoffService } from '../src/handoffs/service.js';
import { ApiKeyAuth } from '../src/http/auth.js';
import { type HealthOptions, operatorReadiness, registerHealth } from '../src/http/health.js';
import { HttpServer } from '../src/http/server.js';
import { RoomManners } from '../src/ingress/room-manners.js';
import { Ingress, type IngressOutcome } from '../src/ingress.js';
import { RateLimits } from '../src/limits.js';
import { createLogger } from '../src/log.js';
import { Metrics } from '../src/metrics.js';
import { PromptComposer } from '../src/prompt.js';
import { RoomClassifier } from '../src/room-classifier.js';
import { scheduleCheck } from '../src/schedules/check.js';
import { createSchedule } from '../src/schedules/create.js';
import { Scheduler } from '../src/schedules/scheduler.js';
import { loadSkills, skillsPromptBlock, skillTools } from '../src/skills.js';
import { startTelemetry, type Telemetry } from '../src/telemetry/otlp.js';
import type { TurnOpener } from '../src/turn-opening.js';
import { EventHub } from '../src/webhooks/events.js';
import { Worker } from '../src/worker.js';
import { HeartbeatWriter, WorkerMonitor } from '../src/worker-heartbeat.js';
import type { McpManager } from '../tools/mcp/client.js';
import { builtinTools } from '../tools/registry.js';
import { createSandbox, type Sandbox, SandboxUnavailableError, sandboxOptions } from '../tools/sandbox/index.js';
import { listenContext } from './channel-context.js';
import { checkSlices } from './config-check.js';
import { type Infra, infraMode, lockDataDir, openInfra } from './infra.js';
import { closingOnFailure, Lifecycle, once, service } from './lifecycle.js';
import { openWorkerEndpoints } from './worker-endpoints.js';

export interface Roles {
  /** Channel listeners and the HTTP server. */
  ingress: boolean;
  /** Turn workers. */
  worker: boolean;
}

/**
 * One gateway process: `start` runs both roles, `ingress` and `worker` one each.
 * Explicit lifecycle: Gateway.start() resolves when it serves; close() drains.
 */
export class Gateway {
  private constructor(
    readonly config: Config,
    readonly infra: Infra,
    readonly provider: ProviderStatus,
    readonly log: Logger,
    private readonly life: Lifecycle,
    readonly http?: HttpServer,
    readonly worker?: Worker,
    readonly chain?: ProviderChain | null,
    readonly mcp?: McpManager,
    readonly channels: ChannelInstance[] = [],
    readonly sandbox?: Sandbox,
  ) {}

  static async start(
    config: Config,
    roles: Roles,
    log: Logger = createLogger(config.log.level, { format: config.log.format }),
    env: Record<string, string | undefined> = process.env,
  ): Promise<Gateway> {
    const mode = infraMode(config);
    if (mode !== 'redis+postgres' && !(roles.ingress && roles.worker)) {
      throw new ConfigError(
        'invalid configuration at "redisUrl" (REDIS_URL): separate ingress and worker processes need REDIS_URL and DATABASE_URL; use `switchboard start` for the embedded default',
      );
    }
    // The provider slots, the slots other keys name, the channels, the operator channel: every problem at once.
    const { slots, reason, channels, problems } = await checkSlices(config, env);
    if (problems.length) throw configError(problems);
    const provider = providerStatus(slots, reason);
    if (!slots.length) log.warn({ reason }, 'no model provider is configured: the gateway will answer every message with a notice saying so');

    // Every long-lived part starts through one Lifecycle (app/lifecycle.ts): in this order, closed in
    // reverse by close(), and closed again (in reverse) when a later step fails. The embedded data
    // folder belongs to one process: a second one refuses first, before anything is opened
    // (app/infra.ts lockDataDir). Then the port is bound, so a port in use fails before a worker
    // or the store is opened.
    const life = new Lifecycle(log);
    return life.boot(async () => {
      // Traces over OTLP when OTEL_EXPORTER_OTLP_*ENDPOINT is set (the SDK is imported only then); closed
      // last, so that the spans of the parts closing before it are flushed.
      let telemetry: Telemetry | undefined;
      await life.start(
        'telemetry',
        service(
          async () => void (telemetry = await startTelemetry(env, log, roles.ingress && roles.worker ? 'start' : roles.ingress ? 'ingress' : 'worker')),
          () => telemetry?.shutdown(),
        ),
      );
      let lock: DataLock | undefined;
      if (mode === 'embedded')
        await life.start(
          'data lock',
          service(
            () => void (lock = lockDataDir(config, 'start', log)),
            () => lock?.release(),
          ),
        );
      let http: HttpServer | undefined;
      // Closed by "intake" (first, on close) or here (a failed start before serving).
      const closeHttp = once(() => http?.close());
      if (roles.ingress) {
        const server = new HttpServer({ host: config.http.host, port: config.http.port, maxBodyBytes: config.http.maxBodyBytes, log });
        await life.start(
          'http',
          service(async () => {
            await listen(server, config);
            http = server;
            lock?.update({ url: server.url });
          }, closeHttp),
        );
      }
      // Tools run in workers only; a host that cannot sandbox them fails here, at start, saying how to fix it.
      let sandbox: Sandbox | undefined;
      if (roles.worker)
        await life.start(
          'sandbox',
          service(
            async () => void (sandbox = await openSandbox(config, log)),
            () => sandbox?.close(),
          ),
        );
      let infra!: Infra;
      await life.start(
        'infra',
        service(
          async () => void (infra = await openInfra(config, log, { localEvents: roles.ingress && roles.worker })),
          () => infra.close(),
        ),
      );
      const providerLog = log.child({ component: 'providers' });
      const chain: ProviderChain | null = slots.length ? new FallbackChain(slots, infra.cooldowns, config.fallback, undefined, providerLog) : null;
      // Summaries go to a cheaper slot first when one is named; the others back it up.
      const cheap = config.compaction.summarizerSlot;
      const summarizer =
        chain && cheap
          ? new FallbackChain(
              [...slots.filter((x) => x.id === cheap), ...slots.filter((x) => x.id !== cheap)],
              infra.cooldowns,
              config.fallback,
              undefined,
              providerLog,
            )
          : chain;
      // Yes/no questions to a cheap slot (ambient mode, schedule checks): their own cooldowns, so they never cool the turn's slots.
      const cheapVerdict = () =>
        new CheapVerdict({ chain, cooldowns: new MemoryCooldowns(), settings: config.fallback, secrets: config.moat.secrets, log: providerLog });
      const metrics = new Metrics();
      const workers = new WorkerMonitor(infra.heartbeats);
      const events = new EventHub({ queue: infra.events, store: infra.webhooks, config, log, env });
      const opCh = config.approvals.operatorChannel;
      const opDeliverer = opCh ? channels.find((c) => c.name === opCh.channel)?.deliverer : undefined;
      if (opCh && !opDeliverer?.notifyApproval)
        throw new ConfigError(
          `invalid configuration at "approvals.operatorChannel.channel": "${opCh.channel}" is not a configured channel that can post approval requests (slack, discord)`,
        );
      const approvals = new ApprovalService({
        approvals: infra.approvals,
        store: infra.store,
        queue: infra.queue,
        timers: infra.timers,
        config,
        log,
        events,
        ...(opCh && opDeliverer?.notifyApproval
          ? {
              notify: (a) =>
                opDeliverer.notifyApproval!(opCh.target, approvalInfo(a), approvalRequestText(a, { conversation: true }), {
                  deliveries: infra.deliveries,
                  state: infra.channelState,
                  log,
                }),
            }
          : {}),
      });
      // Human takeover (src/handoffs/): requests and relayed messages go to takeover.operatorChannel, else approvals.operatorChannel.
      const tkCh = config.takeover.operatorChannel ?? config.approvals.operatorChannel;
      const tkDeliverer = tkCh ? channels.find((c) => c.name === tkCh.channel)?.deliverer : undefined;
      if (config.takeover.operatorChannel && !tkDeliverer?.notifyText)
        throw new ConfigError(
          `invalid configuration at "takeover.operatorChannel.channel": "${config.takeover.operatorChannel.channel}" is not a configured channel that can post to operators (slack, discord, sms, whatsapp)`,
        );
      const deliverable = new Set(channels.filter((c) => c.deliverer).map((c) => c.name));
      const handoffRepo = new HandoffStore(infra.store.db);
      const handoffs = new HandoffService({
        repo: handoffRepo,
        conversations: infra.store,
        config: config.takeover,
        log: log.child({ part: 'handoffs' }),
        emit: (type, data) => events.emit(type, data),
        metrics,
        bus: infra.bus,
        withdrawParked: (conversationId, operator) => approvals.withdrawForTakeover(conversationId, operator),
        // An operator's message goes out like a turn's reply: a delivery job (retried, dead-lettered) replays it into the channel.
        deliver: async (conv, text, ref) => {
          if (!deliverable.has(conv.channel)) return false;
          const inboxId = await handoffRepo.replyTarget(conv.id);
          if (inboxId === undefined) return false;
          const turnId = `op_${ref}`;
          const usage = { input: 0, output: 0, totalTokens: 0, cost: 0 };
          await infra.deliveryJobs.add({
            turnId,
            turnAttempt: 0,
            conversationId: conv.id,
            channel: conv.channel,
            inboxIds: [inboxId],
            events: [
              { type: 'turn_start', turnId, conversationId: conv.id, inboxIds: [inboxId], attempt: 1 },
              { type: 'text_delta', turnId, delta: text },
              { type: 'done', turnId, text, finishReason: 'stop', usage },
            ],
          });
          return true;
        },
        ...(tkCh && tkDeliverer?.notifyText
          ? { notifyOperators: (text: string) => tkDeliverer.notifyText!(tkCh.target, text, { deliveries: infra.deliveries, state: infra.channelState, log }) }
          : {}),
      });
      const skills = loadSkills(config.skills.dir);
      const tools = !sandbox
        ? []
        : [
            ...skillTools(() => skills),
            ...builtinTools({
              sandbox,
              store: infra.store,
              scanWrite: (text) => {
                const f = scanText(text, { contact: false });
                return f.length ? { kinds: [...new Set(f.map((x) => x.kind))] } : null;
              },
              findSecrets: (text) => scanText(text).length > 0,
              // schedule_message: the agent's schedules, each call approved by an operator first.
              createSchedule: (req, by) => createSchedule(new ScheduleStore(infra.store.db), req, by, { defaultTz: config.schedules.defaultTz }),
              // request_handoff: the agent asks for a human (no approval: it only opens a request operators see).
              requestHandoff: { request: (conversationId, r) => handoffs.request(conversationId, r), slaMinutes: config.takeover.slaMinutes },
              ...(config.tools.enabled ? { enabled: config.tools.enabled } : {}),
            }),
          ];
      // MCP servers connect in the background: a slow or dead one never blocks start or a turn.
      // The MCP client SDK (~250 ms of CPU and ~30 MB at start) is loaded only when servers are configured.
      const mcp =
        roles.worker && config.mcp.servers.length
          ? new (await import('../tools/mcp/client.js')).McpManager(config.mcp.servers, { log: log.child({ component: 'mcp' }) })
          : undefined;
      if (mcp)
        await life.start(
          'mcp',
          service(
            () => mcp.start(),
            () => mcp.close(),
          ),
        );
      // Each started listener's close, run first by "intake" on close (stop taking messages before the drain).
      const listenerCloses: Array<() => Promise<void>> = [];
      // This process's worker (created below, when it has the role) opens one-off turns at accept (src/turn-opening.ts).
      let opener: TurnOpener | undefined;
      if (roles.ingress && http) {
        const auth = new ApiKeyAuth(config.http.apiKeys, config.http.openAccess, config.http.operatorKeys);
        if (!auth.configured) log.warn('no API keys are configured (SWITCHBOARD_API_KEYS): every API request will be refused');
        const healthOptions: HealthOptions = {
          infra,
          provider,
          mode: infra.mode,
          metrics,
          workers,
          extra: () => ({
            ...(roles.worker ? { mcp: mcp?.status() ?? [] } : {}),
            channels: Object.fromEntries(channels.filter((c) => c.listener && !c.builtin).map((c) => [c.name, c.listener!.health()])),
          }),
          channels: () => channels.filter((c) => c.listener && !c.builtin).map((c) => ({ name: c.name, ...c.listener!.health() })),
          isOperator: (req) => auth.authenticate(req)?.operator === true,
        };
        registerHealth(http, healthOptions);
        const access = new AccessControl(infra.access, config);
        const commands = new ConversationCommands(infra.store, infra.bus, provider);
        const limits = new RateLimits(infra.rateLimiter, config);
        const ingress = new Ingress(infra.store, infra.queue, log, {
          access,
          approvals,
          commands,
          conversations: { config, bus: infra.bus },
          limits,
          handoffs,
          outcomes: infra.ingressOutcomes as IngressOutcomeRepository<IngressOutcome>,
          dropped: (channel, reason) => metrics.dropped.inc({ channel, reason }),
          opener: { reserve: (msg) => opener?.reserve(msg) },
        });
        const classifier = new RoomClassifier(cheapVerdict());
        const manners = new RoomManners({
          state: infra.channelState,
          locks: infra.locks,
          chimeIn: (slot, text) => classifier.chimeIn(slot, text),
          ignored: (channel, reason) => metrics.roomIgnored.inc({ channel, reason }),
          log,
        });
        registerOperatorApi(http, { auth, store: infra.store, approvals });
        registerDataRightsApi(http, { auth, store: infra.store, rights: new DataRightsStore(infra.store.db), dataDir: config.dataDir });
        registerMcpServer(http, { auth, store: infra.store, bus: infra.bus, ingress, approvals });
        registerWebhookApi(http, auth, infra.webhooks);
        registerDeliveryApi(http, auth, infra.deliveries);
        registerHandoffApi(http, { auth, handoffs });
        registerScheduleApi(http, { auth, schedules: new ScheduleStore(infra.store.db), conversations: infra.store, defaultTz: config.schedules.defaultTz });
        registerConsole(http, { auth, infra, chain, config, health: () => operatorReadiness(healthOptions), dropped: () => metrics.droppedCounts() });
        registerAccessApi(http, auth, infra.access);
        for (const c of channels) {
          if (!c.listener) continue;
          const listener = c.listener;
          const close = once(() =>
            listener.close().catch((err: unknown) => log.warn({ err, part: `listener ${c.name}` }, `closing listener ${c.name} failed; closing the rest`)),
          );
          listenerCloses.push(close);
          const name = `listener ${c.name}`;
          await life.start(
            name,
            service(
              closingOnFailure(
                name,
                log,
                async () => {
                  const services = {
                    ingress,
                    approvals,
                    access,
                    commands,
                    limits,
                    auth,
                    http: http!,
                    store: infra.store,
                    bus: infra.bus,
                    state: infra.channelState,
                    deliveries: infra.deliveries,
                    locks: infra.locks,
                    workers,
                    manners,
                    dropped: (channel: string, reason: string) => metrics.dropped.inc({ channel, reason }),
                    maxImageBytes: config.attachments.maxImageBytes,
                  };
                  await listener.start(listenContext(services, log.child({ channel: c.name }), c.name));
                },
                close,
              ),
              close,
              () => listener.health(),
            ),
          );
        }
      }
      let worker: Worker | undefined;
      if (roles.worker) {
        const w = new Worker({
          store: infra.store,
          queue: infra.queue,
          timers: infra.timers,
          bus: infra.bus,
          locks: infra.locks,
          openSlots: () => infra.openTurnSlots(),
          judgeCooldowns: new MemoryCooldowns(),
          chain,
          summarizer,
          prompts: new PromptComposer(undefined, skillsPromptBlock(skills)),
          config,
          log,
          approvals,
          approvalStore: infra.approvals,
          tools: () => (mcp ? [...tools, ...mcp.tools()] : tools),
          metrics,
          deliverers: new Map(channels.filter((c) => c.deliverer).map((c) => [c.name, bindDeliverer(c.deliverer!, c.parseReplyTo)])),
          deliverContext: { deliveries: infra.deliveries, state: infra.channelState, log },
          events,
          eventQueue: infra.events,
          deliveryQueue: infra.deliveryJobs,
        });
        worker = w;
        opener = w.opener();
        for (const c of channels) {
          if (!c.deliverer) continue;
          const deliverer = c.deliverer;
          const name = `deliverer ${c.name}`;
          const close = () => deliverer.close?.();
          await life.start(
            name,
            service(
              closingOnFailure(
                name,
                log,
                async () => {
                  await deliverer.start?.({ deliveries: infra.deliveries, state: infra.channelState, log: log.child({ channel: c.name }) });
                },
                close,
              ),
              close,
            ),
          );
        }
        // The heartbeat is written before "started" and removed first on close (ingresses stop sending
        // it requests); closing the queue then waits for the active jobs (turns finish, deliverers still open).
        const heartbeat = new HeartbeatWriter(infra.heartbeats, w, log);
        await life.start(
          'worker',
          service(
            async () => {
              w.start();
              await heartbeat.start();
              log.info({ mode: infra.mode, concurrency: config.queue.concurrency, worker: w.id }, 'switchboard worker started');
            },
            async () => {
              await heartbeat.stop();
              await infra.queue.close();
              // After the drains (a closing turn may still hand a reply over), before the deliverers close.
              await w.close();
              await infra.deliveryJobs.close();
            },
          ),
        );
        // Every worker sweeps the handoff SLAs: each due request is claimed by one of them (adapters/store/handoffs.ts expireDue).
        await life.start(
          'handoffs',
          service(
            async () => handoffs.start(),
            () => handoffs.stop(),
          ),
        );
        // Every worker fires schedules: a tick is claimed by one of them (src/schedules/scheduler.ts).
        // Started after the worker, so stopped before the drain queue closes.
        if (config.schedules.enabled) {
          const scheduler = new Scheduler({
            schedules: new ScheduleStore(infra.store.db),
            accept: (msg, agent) => infra.store.accept(msg, agent),
            queue: infra.queue,
            config: config.schedules,
            log: log.child({ part: 'schedules' }),
            undelivered: (run) => events.emit('schedule.undelivered', { schedule: run.scheduleId, tick: run.tick, turn: run.turnId }),
            ...(config.schedules.checkSlot
              ? { check: scheduleCheck(cheapVerdict(), config.schedules.checkSlot, (id, limit) => infra.store.transcript(id, limit)) }
              : {}),
          });
          await life.start(
            'schedules',
            service(
              async () => scheduler.start(),
              () => scheduler.stop(),
            ),
          );
        }
      }
      // A worker-only process serves its metrics and health on metrics.port, when set.
      if (roles.worker && !roles.ingress) {
        let endpoints: HttpServer | undefined;
        await life.start(
          'metrics endpoint',
          service(
            async () => void (endpoints = await openWorkerEndpoints(config, { infra, provider, metrics, workers, log })),
            () => endpoints?.close(),
          ),
        );
      }
      if (http) {
        const server = http;
        // Closed first: the listeners stop taking messages, then the HTTP server; only then the drain.
        await life.start(
          'intake',
          service(
            () => {
              server.serve();
              log.info({ url: server.url, mode: infra.mode }, 'switchboard is listening');
            },
            async () => {
              for (const close of listenerCloses) await close();
              await closeHttp();
            },
          ),
        );
      }
      return new Gateway(config, infra, provider, log, life, http, worker, chain, mcp, channels, sandbox);
    });
  }

  get url(): string | undefined {
    return this.http?.url;
  }

  /** Stops taking work, lets running turns finish, closes connections: the parts in reverse order of start, once. */
  close(): Promise<void> {
    return this.life.close();
  }
}

/** Binds the HTTP port (answering 503 until serve()); a port that cannot be bound is a configuration error, in one line. */
async function listen(http: HttpServer, config: Config): Promise<void> {
  const { host, port } = config.http;
  try {
    await http.start({ serve: false });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new ConfigError(`port ${port} on ${host} is in use (SWITCHBOARD_HTTP_PORT)`);
    if (code === 'EACCES') throw new ConfigError(`port ${port} on ${host} cannot be bound: permission denied (SWITCHBOARD_HTTP_PORT)`);
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN')
      throw new ConfigError(`host ${host} is not an address of this machine (SWITCHBOARD_HTTP_HOST)`);
    throw err;
  }
}

/** The configured tool sandbox; `none` is logged as a warning on every start. */
async function openSandbox(config: Config, log: Logger): Promise<Sandbox> {
  const c = config.tools.sandbox;
  if (c.mode === 'none') {
    log.warn(
      "tools.sandbox is none: shell_exec runs commands as the gateway's own user, with access to everything that user can read (set tools.sandbox: bwrap)",
    );
  }
  try {
    return await createSandbox(sandboxOptions(c), { ssrf: { allowHosts: c.allowHosts, allowCidrs: c.allowCidrs }, log: log.child({ component: 'sandbox' }) });
  } catch (err) {
    if (err instanceof SandboxUnavailableError) throw new ConfigError(`invalid configuration at "tools.sandbox" (SWITCHBOARD_SANDBOX): ${err.message}`);
    throw err;
  }
}
