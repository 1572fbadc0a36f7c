import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/**
 * Fake MCP servers over Streamable HTTP on 127.0.0.1, for the MCP client tests.
 *
 * Tools offered:
 *  - lookup(q)   read-only, answers `found:<q>`
 *  - fail        read-only, answers isError:true with text `boom`
 *  - media       read-only, answers text + an image part
 *  - hang        read-only, never answers
 *  - write_note  no annotations (so not read-only)
 *  - delete_all  destructive
 */
export interface FakeMcpHttp {
  url: string;
  port: number;
  /** HTTP requests seen, by method. */
  requests: Record<string, number>;
  /** Stateful only: registers a tool on every live session (the SDK sends notifications/tools/list_changed) and on future ones. */
  addTool(name: string): void;
  close(): Promise<void>;
}

export interface FakeMcpHttpOptions {
  /** Bearer token the node:http handler requires (none: no auth). */
  token?: string;
  /** Fixed port (for "comes up later" tests); default an ephemeral one. */
  port?: number;
  /** Sessions + GET SSE stream, so the server can push list_changed. Default stateless JSON responses. */
  stateful?: boolean;
}

function registerBaseTools(s: McpServer, extra: string[]): void {
  const ro = { readOnlyHint: true, openWorldHint: false };
  s.registerTool('lookup', { description: 'Looks a word up', inputSchema: { q: z.string() }, annotations: ro }, async ({ q }) => ({
    content: [{ type: 'text', text: `found:${q}` }],
  }));
  s.registerTool('fail', { description: 'Always fails', annotations: ro }, async () => ({
    content: [{ type: 'text', text: 'boom' }],
    isError: true,
  }));
  s.registerTool('media', { description: 'Text and a picture', annotations: ro }, async () => ({
    content: [
      { type: 'text', text: 'caption' },
      { type: 'image', data: Buffer.from('png').toString('base64'), mimeType: 'image/png' },
    ],
  }));
  s.registerTool('hang', { description: 'Never answers', annotations: ro }, () => new Promise<never>(() => {}));
  s.registerTool('write_note', { description: 'Writes a note', inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text: `noted:${text}` }],
  }));
  s.registerTool('delete_all', { description: 'Deletes everything', annotations: { readOnlyHint: false, destructiveHint: true } }, async () => ({
    content: [{ type: 'text', text: 'deleted' }],
  }));
  for (const name of extra) registerExtra(s, name);
}

function registerExtra(s: McpServer, name: string): void {
  s.registerTool(name, { description: `Extra tool ${name}`, annotations: { readOnlyHint: true } }, async () => ({
    content: [{ type: 'text', text: `extra:${name}` }],
  }));
}

function newServer(extra: string[]): McpServer {
  const s = new McpServer({ name: 'fake-http', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
  registerBaseTools(s, extra);
  return s;
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  if (req.method !== 'POST') return undefined;
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  return raw ? JSON.parse(raw) : undefined;
}

function isInitialize(body: unknown): boolean {
  const msgs = Array.isArray(body) ? body : [body];
  return msgs.some((m) => m && typeof m === 'object' && (m as { method?: string }).method === 'initialize');
}

export async function startFakeMcpHttp(opts: FakeMcpHttpOptions = {}): Promise<FakeMcpHttp> {
  const requests: Record<string, number> = {};
  const extra: string[] = [];
  const sessions = new Map<string, { server: McpServer; transport: StreamableHTTPServerTransport }>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    requests[req.method ?? '?'] = (requests[req.method ?? '?'] ?? 0) + 1;
    if (opts.token !== undefined && req.headers.authorization !== `Bearer ${opts.token}`) {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }).end(JSON.stringify({ error: 'unauthorized' }));
      return;
    }
    const body = await readBody(req);

    if (!opts.stateful) {
      const server = newServer(extra);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
      return;
    }

    const sid = req.headers['mcp-session-id'];
    const existing = typeof sid === 'string' ? sessions.get(sid) : undefined;
    if (existing) {
      await existing.transport.handleRequest(req, res, body);
      return;
    }
    if (req.method === 'POST' && sid === undefined && isInitialize(body)) {
      const server = newServer(extra);
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, { server, transport }),
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
      return;
    }
    res
      .writeHead(404, { 'content-type': 'application/json' })
      .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
  };

  const http: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (http.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    requests,
    addTool(name) {
      extra.push(name);
      for (const { server } of sessions.values()) registerExtra(server, name);
    },
    async close() {
      for (const { server, transport } of sessions.values()) {
        await transport.close().catch(() => {});
        await server.close().catch(() => {});
      }
      sessions.clear();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** A port nothing listens on right now (for "server comes up later"). */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', () => resolve()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}
