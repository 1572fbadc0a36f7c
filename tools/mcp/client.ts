import { createHash } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, type Tool, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { ignoreError, SwitchboardError } from '../../kernel/errors.js';
import { type JsonTool, type ToolContext, ToolError, type ToolOutput } from '../contract.js';
import type { McpServerConfig } from './config.js';

export type McpServerState = 'connecting' | 'connected' | 'failed' | 'closed';

export interface McpServerStatus {
  name: string;
  state: McpServerState;
  tools: number;
  lastError?: string;
  retryInMs?: number;
}

export interface McpManagerOptions {
  log?: Logger;
  /** Where bearer tokens and allow-listed stdio variables are read from (default process.env). */
  env?: Record<string, string | undefined>;
  /** Reconnect backoff: initialMs doubling up to maxMs (default 1 s → 60 s). */
  retry?: { initialMs?: number; maxMs?: number };
  /** Liveness ping of connected servers, so a dead HTTP server is noticed between calls (default 30 s, 0 = off). */
  pingIntervalMs?: number;
}

/** Variables every stdio server gets from the environment (no secrets), besides its envAllow list. */
export const DEFAULT_STDIO_ENV = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'TERM', 'LANG', 'LANGUAGE', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TMPDIR'];

const CLIENT_INFO = { name: 'switchboard', version: '0.1.0' };
const MAX_NAME = 64;
const MAX_DESCRIPTION = 2000;
const MAX_LIST_PAGES = 50;

/**
 * Connects to the configured MCP servers and offers their tools as JsonTools.
 * Servers connect in the background and reconnect with backoff; a missing or
 * broken server never blocks or breaks a turn — its tools are simply absent.
 */
export class McpManager {
  private readonly conns: ServerConn[];
  private started = false;
  private closed = false;

  constructor(servers: McpServerConfig[], opts: McpManagerOptions = {}) {
    const env = opts.env ?? process.env;
    const retry = { initialMs: opts.retry?.initialMs ?? 1_000, maxMs: opts.retry?.maxMs ?? 60_000 };
    const ping = opts.pingIntervalMs ?? 30_000;
    this.conns = servers.map((cfg) => new ServerConn(cfg, { env, retry, ping, log: opts.log?.child({ mcpServer: cfg.name }) }));
  }

  /** Starts connecting every server in the background; never throws, never blocks a turn. */
  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    for (const c of this.conns) c.start();
  }

  /** The tools available right now (connected servers only), namespaced `${server}__${tool}`. */
  tools(): JsonTool[] {
    return this.conns.flatMap((c) => c.offered());
  }

  /** Per-server state for /readyz and doctor. */
  status(): McpServerStatus[] {
    return this.conns.map((c) => c.status());
  }

  /** Resolves when every server has either connected or failed its first attempt (call start() first). */
  async ready(): Promise<void> {
    await Promise.all(this.conns.map((c) => c.firstAttempt));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(this.conns.map((c) => c.close()));
  }
}

interface ConnOptions {
  env: Record<string, string | undefined>;
  retry: { initialMs: number; maxMs: number };
  ping: number;
  log?: Logger;
}

class ServerConn {
  private state: McpServerState = 'connecting';
  private client: Client | undefined;
  /** Bumped on every (re)connect and loss; callbacks from an older client are ignored. */
  private gen = 0;
  private failures = 0;
  private lastError: string | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private nextRetryAt: number | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private offeredTools: JsonTool[] = [];
  private refreshing: Promise<void> | undefined;
  private refreshAgain = false;
  private settleFirst!: () => void;
  readonly firstAttempt: Promise<void>;

  constructor(
    private readonly cfg: McpServerConfig,
    private readonly o: ConnOptions,
  ) {
    this.firstAttempt = new Promise((resolve) => (this.settleFirst = resolve));
  }

  start(): void {
    void this.attempt();
  }

  offered(): JsonTool[] {
    return this.state === 'connected' ? this.offeredTools : [];
  }

  status(): McpServerStatus {
    const s: McpServerStatus = { name: this.cfg.name, state: this.state, tools: this.offered().length };
    if (this.lastError) s.lastError = this.lastError;
    if (this.state === 'failed' && this.nextRetryAt !== undefined) s.retryInMs = Math.max(0, this.nextRetryAt - Date.now());
    return s;
  }

  async close(): Promise<void> {
    this.state = 'closed';
    this.gen++;
    clearTimeout(this.retryTimer);
    clearInterval(this.pingTimer);
    this.retryTimer = this.pingTimer = this.nextRetryAt = undefined;
    this.offeredTools = [];
    const client = this.client;
    this.client = undefined;
    this.settleFirst();
    await closeQuietly(client);
  }

  // ── connecting ───────────────────────────────────────────────────────────

  private async attempt(): Promise<void> {
    if (this.state === 'closed') return;
    const gen = ++this.gen;
    this.retryTimer = this.nextRetryAt = undefined;
    this.state = 'connecting';
    let client: Client | undefined;
    try {
      const transport = this.transport();
      client = new Client(CLIENT_INFO);
      const c = client;
      c.onclose = () => this.lost(gen, new Error('connection closed'));
      c.onerror = (err) => this.o.log?.debug({ err: err.message }, 'MCP transport error');
      c.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        if (gen === this.gen && this.state === 'connected') this.refresh();
      });
      const t = this.cfg.connectTimeoutMs;
      const tools = await withTimeout(
        (async () => {
          await c.connect(transport, { timeout: t });
          return listAll(c, t);
        })(),
        t,
        `connect timed out after ${t} ms`,
      );
      if (gen !== this.gen) {
        await closeQuietly(c);
        return;
      }
      this.client = c;
      this.setTools(tools);
      this.state = 'connected';
      this.failures = 0;
      this.lastError = undefined;
      this.startPing(gen);
      this.o.log?.info({ tools: this.offeredTools.length, listed: tools.length }, 'MCP server connected');
    } catch (err) {
      void closeQuietly(client);
      if (gen === this.gen) this.fail(err);
    } finally {
      this.settleFirst();
    }
  }

  private transport(): Transport {
    const cfg = this.cfg;
    if (cfg.transport === 'http') {
      if (!cfg.url) throw new Error('no url configured');
      const headers: Record<string, string> = {};
      if (cfg.bearerTokenEnv) {
        const token = this.o.env[cfg.bearerTokenEnv];
        if (!token) throw new Error(`environment variable ${cfg.bearerTokenEnv} (bearerTokenEnv) is not set`);
        headers.Authorization = `Bearer ${token}`;
      }
      return new StreamableHTTPClientTransport(new URL(cfg.url), { requestInit: { headers } });
    }
    if (!cfg.command) throw new Error('no command configured');
    const env: Record<string, string> = {};
    for (const key of [...DEFAULT_STDIO_ENV, ...cfg.envAllow]) {
      const v = this.o.env[key];
      if (v !== undefined && !v.startsWith('()')) env[key] = v;
    }
    Object.assign(env, cfg.env);
    const t = new StdioClientTransport({ command: cfg.command, args: cfg.args, cwd: cfg.cwd, env, stderr: 'pipe' });
    this.drainStderr(t);
    return t;
  }

  /** Server stderr goes to the debug log, line by line (and must be read so the child never blocks). */
  private drainStderr(t: StdioClientTransport): void {
    const stream = t.stderr;
    if (!stream) return;
    let buf = '';
    const decoder = new StringDecoder('utf8');
    stream.on('data', (chunk: string | Buffer) => {
      buf += typeof chunk === 'string' ? chunk : decoder.write(chunk);
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i).trimEnd();
        buf = buf.slice(i + 1);
        if (line) this.o.log?.debug({ stderr: line.slice(0, 500) }, 'MCP server stderr');
      }
      if (buf.length > 8192) buf = buf.slice(-8192);
    });
    stream.on('error', (err) => this.o.log?.debug({ err: err.message }, 'MCP server stderr closed with an error'));
  }

  private fail(err: unknown): void {
    if (this.state === 'closed') return;
    const previous = this.lastError;
    this.state = 'failed';
    this.lastError = describe(err);
    this.failures++;
    const delay = Math.min(this.o.retry.maxMs, this.o.retry.initialMs * 2 ** Math.min(this.failures - 1, 30));
    this.nextRetryAt = Date.now() + delay;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => void this.attempt(), delay);
    this.retryTimer.unref();
    // Warn when something new goes wrong; repeated identical failures while retrying go to debug.
    const level = this.failures === 1 || this.lastError !== previous ? 'warn' : 'debug';
    this.o.log?.[level]({ err: this.lastError, retryInMs: delay, failures: this.failures }, 'MCP server unavailable');
  }

  /** The connection of generation `gen` is gone (closed, or a request failed at the transport level): reconnect. */
  private lost(gen: number, err: unknown): void {
    if (gen !== this.gen || this.state !== 'connected') return;
    this.gen++;
    clearInterval(this.pingTimer);
    this.pingTimer = undefined;
    const client = this.client;
    this.client = undefined;
    this.offeredTools = [];
    void closeQuietly(client);
    this.fail(new Error(`connection lost: ${describe(err)}`));
  }

  private startPing(gen: number): void {
    clearInterval(this.pingTimer);
    if (this.o.ping <= 0) return;
    this.pingTimer = setInterval(() => {
      const client = this.client;
      if (!client || gen !== this.gen) return;
      client.ping({ timeout: this.cfg.connectTimeoutMs }).catch((err: unknown) => {
        if (err instanceof McpError && err.code === ErrorCode.MethodNotFound) return;
        this.lost(gen, err);
      });
    }, this.o.ping);
    this.pingTimer.unref();
  }

  // ── tools ────────────────────────────────────────────────────────────────

  /** Re-lists the tools after a list_changed notification (coalesced). */
  private refresh(): void {
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    this.refreshing = (async () => {
      do {
        this.refreshAgain = false;
        const gen = this.gen;
        const client = this.client;
        if (!client || this.state !== 'connected') return;
        try {
          const tools = await withTimeout(listAll(client, this.cfg.connectTimeoutMs), this.cfg.connectTimeoutMs, 'tools/list timed out');
          if (gen === this.gen && this.state === 'connected') {
            this.setTools(tools);
            this.o.log?.info({ tools: this.offeredTools.length }, 'MCP tool list refreshed');
          }
        } catch (err) {
          this.o.log?.warn({ err: describe(err) }, 'MCP tool list refresh failed');
          if (!(err instanceof McpError)) this.lost(gen, err);
        }
      } while (this.refreshAgain);
    })().finally(() => (this.refreshing = undefined));
  }

  private setTools(remote: Tool[]): void {
    const server = this.cfg.name;
    const used = new Set<string>();
    const out: JsonTool[] = [];
    for (const t of remote) {
      const readOnly = t.annotations?.readOnlyHint === true;
      if (!readOnly && !this.cfg.trustWriteTools) continue;
      const name = namespaced(server, t.name);
      if (used.has(name)) {
        this.o.log?.warn({ tool: t.name }, 'MCP tool name collides after sanitising; skipped');
        continue;
      }
      used.add(name);
      const { $schema: _drop, ...schema } = (t.inputSchema ?? { type: 'object' }) as Record<string, unknown>;
      if (schema.type !== 'object') schema.type = 'object';
      if (!schema.properties) schema.properties = {};
      const description = `[${server}] ${(t.description ?? t.annotations?.title ?? t.title ?? t.name).trim()}`;
      out.push({
        name,
        description: description.length > MAX_DESCRIPTION ? `${description.slice(0, MAX_DESCRIPTION - 1)}…` : description,
        parameters: schema,
        // An untrusted server's "read-only" is only its own claim: treated as mutating.
        effect: readOnly && this.cfg.trusted ? 'read' : 'write',
        effectFromThirdParty: true,
        // Run again after a restart only on a trusted server's word (read-only, or idempotent).
        idempotent: this.cfg.trusted === true && (readOnly || t.annotations?.idempotentHint === true),
        toolset: `mcp:${server}`,
        timeoutMs: this.cfg.callTimeoutMs,
        execute: (args, ctx) => this.call(name, t.name, args, ctx),
      });
    }
    this.offeredTools = out;
  }

  private async call(exposed: string, remoteName: string, args: unknown, ctx: ToolContext): Promise<ToolOutput> {
    const client = this.client;
    const gen = this.gen;
    if (!client || this.state !== 'connected') {
      throw new ToolError(`${exposed}: MCP server "${this.cfg.name}" is not connected${this.lastError ? ` (${this.lastError})` : ''}`);
    }
    if (args !== undefined && args !== null && (typeof args !== 'object' || Array.isArray(args))) {
      throw new ToolError(`${exposed}: arguments must be an object`);
    }
    const timeout = this.cfg.callTimeoutMs;
    const signal = ctx.signal;
    if (signal.aborted) throw new ToolError(`${exposed} was aborted`);
    let result: Awaited<ReturnType<Client['callTool']>>;
    try {
      // Our own timer too: the SDK's request timeout only runs once the request has been sent.
      result = await withTimeout(
        client.callTool({ name: remoteName, arguments: (args ?? {}) as Record<string, unknown> }, undefined, { timeout, signal }),
        timeout + 250,
        'timeout',
        signal,
      );
    } catch (err) {
      if (signal.aborted) throw new ToolError(`${exposed} was aborted`);
      if ((err instanceof McpError && err.code === ErrorCode.RequestTimeout) || err instanceof TimeoutError) {
        throw new ToolError(`${exposed} timed out after ${timeout} ms`);
      }
      // Not a JSON-RPC answer: the transport failed (server down, session gone) → reconnect in the background.
      if (!(err instanceof McpError) || err.code === ErrorCode.ConnectionClosed) this.lost(gen, err);
      throw new ToolError(`${exposed} failed: ${describe(err)}`);
    }
    const text = renderResult(result);
    if (result.isError === true) throw new ToolError(`${exposed}: ${text || 'the tool reported an error'}`);
    return { text };
  }
}

// ── helpers ──────────────────────────────────────────────────────────────

class TimeoutError extends SwitchboardError {
  readonly code = 'mcp_timeout';
  override readonly retryable = true;
}

/** Races `p` against a timer (and an optional abort signal); the loser's rejection is swallowed. */
function withTimeout<T>(p: Promise<T>, ms: number, message: string, signal?: AbortSignal): Promise<T> {
  p.catch(ignoreError("the loser of the race: its outcome is the caller's no more"));
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const guard = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(message)), ms);
    if (signal) {
      onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      signal.addEventListener('abort', onAbort, { once: true });
    }
  });
  return Promise.race([p, guard]).finally(() => {
    clearTimeout(timer);
    if (signal && onAbort) signal.removeEventListener('abort', onAbort);
  });
}

async function listAll(client: Client, timeout: number): Promise<Tool[]> {
  if (!client.getServerCapabilities()?.tools) return [];
  const tools: Tool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const res = await client.listTools(cursor ? { cursor } : undefined, { timeout });
    tools.push(...res.tools);
    cursor = res.nextCursor;
    if (!cursor) break;
  }
  return tools;
}

async function closeQuietly(client: Client | undefined): Promise<void> {
  if (!client) return;
  client.onclose = undefined;
  try {
    await withTimeout(client.close(), 5_000, 'close timed out');
  } catch {
    /* already gone */
  }
}

/** `${server}__${tool}`, limited to [a-zA-Z0-9_-] and 64 characters (what model providers accept). */
export function namespaced(server: string, tool: string): string {
  const name = `${server}__${tool.replace(/[^a-zA-Z0-9_-]/g, '_')}`;
  if (name.length <= MAX_NAME) return name;
  const hash = createHash('sha256').update(tool).digest('hex').slice(0, 8);
  return `${name.slice(0, MAX_NAME - 9)}_${hash}`;
}

/** Joins the text parts of a tool result; other parts become short markers. */
export function renderResult(result: Record<string, unknown>): string {
  const parts: string[] = [];
  const content = Array.isArray(result.content) ? (result.content as Array<Record<string, unknown>>) : [];
  for (const c of content) {
    switch (c.type) {
      case 'text':
        parts.push(String(c.text ?? ''));
        break;
      case 'image':
        parts.push('[image]');
        break;
      case 'audio':
        parts.push('[audio]');
        break;
      case 'resource': {
        const r = (c.resource ?? {}) as { uri?: string; text?: string };
        parts.push(typeof r.text === 'string' ? `[resource ${r.uri ?? ''}]\n${r.text}` : `[resource ${r.uri ?? ''}]`);
        break;
      }
      case 'resource_link':
        parts.push(`[resource ${String(c.uri ?? '')}]`);
        break;
      default:
        parts.push(`[${String(c.type)}]`);
    }
  }
  if (parts.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  if (parts.length === 0 && 'toolResult' in result) return JSON.stringify(result.toolResult);
  return parts.join('\n');
}

function describe(err: unknown): string {
  if (err instanceof StreamableHTTPError && typeof err.code === 'number' && err.code > 0) return `HTTP ${err.code}: ${err.message}`;
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    const c = cause instanceof Error ? ` (${(cause as NodeJS.ErrnoException).code ?? cause.message})` : '';
    return `${err.message}${c}`.slice(0, 500);
  }
  return String(err).slice(0, 500);
}
