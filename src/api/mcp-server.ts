import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Bus } from '../../adapters/bus/port.js';
import type { GatewayStore } from '../../adapters/store/ports/index.js';
import type { ApprovalService } from '../approvals/service.js';
import { conversationTopic } from '../event-publisher.js';
import type { ApiKeyAuth } from '../http/auth.js';
import { sendError } from '../http/errors.js';
import { checkJsonContentType, HttpError, type HttpServer, parseJson } from '../http/server.js';
import { TurnWaiter } from '../http/turn-follower.js';
import type { Ingress } from '../ingress.js';

export interface McpServerDeps {
  auth: ApiKeyAuth;
  store: GatewayStore;
  bus: Bus;
  ingress: Ingress;
  approvals: ApprovalService;
}

const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });

/**
 * Switchboard as an MCP server (Streamable HTTP, stateless, at /mcp): another
 * agent holding an operator key can list conversations, read transcripts, send
 * a message into a conversation and answer approvals.
 */
export function registerMcpServer(server: HttpServer, deps: McpServerDeps): void {
  const build = async (operatorId: string) => {
    const { McpServer } = await sdk();
    const s = new McpServer({ name: 'switchboard', version: '0.1.0' });
    s.registerTool(
      'list_conversations',
      {
        description: 'Recently active conversations',
        inputSchema: { limit: z.number().int().positive().max(200).optional() },
        annotations: { readOnlyHint: true },
      },
      async ({ limit }) => {
        const rows = await deps.store.listConversations(limit ?? 50);
        return text(JSON.stringify(rows.map((r) => ({ id: r.id, key: r.key, channel: r.channel, turns: r.turns, updatedAt: r.updatedAt }))));
      },
    );
    s.registerTool(
      'read_transcript',
      {
        description: 'The messages of a conversation (by id)',
        inputSchema: { conversation: z.string(), after: z.number().int().min(0).optional() },
        annotations: { readOnlyHint: true },
      },
      async ({ conversation, after }) => {
        if (!(await deps.store.conversation(conversation))) return { ...text(`no conversation ${conversation}`), isError: true };
        const rows = await deps.store.messagesAfter(conversation, after ?? 0);
        return text(JSON.stringify(rows.map((r) => ({ id: r.id, role: r.role, turn: r.turnId, content: (r.content as { content?: unknown }).content }))));
      },
    );
    s.registerTool(
      'send_message',
      {
        description: 'Send a message into a conversation (by id) and wait for the reply',
        inputSchema: { conversation: z.string(), text: z.string().min(1), timeoutSeconds: z.number().int().positive().max(600).optional() },
      },
      async ({ conversation, text: body, timeoutSeconds }) => {
        const conv = await deps.store.conversation(conversation);
        if (!conv) return { ...text(`no conversation ${conversation}`), isError: true };
        // Subscribed before the message is taken: the turn starts only after receive() wakes a worker.
        const waiter = await TurnWaiter.open(deps.bus, deps.store, conversationTopic(conv.key));
        try {
          const msg = {
            channel: 'mcp',
            externalId: randomUUID(),
            conversationKey: conv.key,
            sender: { id: operatorId },
            text: body,
            attachments: [],
            receivedAt: new Date(),
          };
          const outcome = await deps.ingress.receive(msg, { authenticated: true, fresh: true, agent: conv.agent });
          if (outcome.kind === 'refused') return { ...text(outcome.reply ?? 'refused'), isError: true };
          if (outcome.kind === 'answered') return outcome.ok ? text(outcome.reply) : { ...text(outcome.reply), isError: true };
          waiter.bind(outcome.inboxId);
          const deadline = Date.now() + (timeoutSeconds ?? 120) * 1000;
          for (;;) {
            const e = await waiter.next(Math.max(0, deadline - Date.now()));
            if (!e) return text('sent; the reply is not ready yet (read the transcript later)');
            if (e.type === 'done') return text(e.text);
            if (e.type === 'error') return { ...text(e.message), isError: true };
          }
        } finally {
          waiter.close();
        }
      },
    );
    s.registerTool('list_approvals', { description: 'Pending approval requests', inputSchema: {}, annotations: { readOnlyHint: true } }, async () => {
      const rows = await deps.approvals.pending();
      return text(
        JSON.stringify(
          rows.map((r) => ({
            code: r.code,
            conversation: r.conversationId,
            tool: r.tool,
            arguments: r.args,
            tier: r.tier,
            reasons: r.reasons,
            alwaysPermitted: r.rulePermitted,
            expiresAt: r.expiresAt,
          })),
        ),
      );
    });
    // "always" allows exactly this call from now on, in its conversation unless scope says sender or global.
    s.registerTool(
      'answer_approval',
      {
        description:
          'Approve or deny a pending approval by its code; "always" also allows exactly this call again (scope: conversation, the default, sender or global)',
        inputSchema: { code: z.string(), decision: z.enum(['approve', 'deny', 'always']), scope: z.enum(['conversation', 'sender', 'global']).optional() },
      },
      async ({ code, decision, scope }) => {
        const r = await deps.approvals.answer(code, decision, { channel: 'mcp', id: operatorId, operator: true }, scope ? { scope } : {});
        return r.ok ? text(r.message) : { ...text(r.message), isError: true };
      },
    );
    return s;
  };

  const handle = async (ctx: Parameters<Parameters<HttpServer['route']>[2]>[0]) => {
    const p = deps.auth.authenticate(ctx.req);
    if (!p?.operator) return sendError(ctx.res, 401, 'The MCP endpoint needs an operator key.', { code: 'invalid_api_key' });
    let body: unknown;
    if (ctx.req.method === 'POST') {
      try {
        checkJsonContentType(ctx.req);
        body = parseJson(await ctx.body());
      } catch (err) {
        if (err instanceof HttpError) throw err; // 400, 413 or 415, answered by the router
        return sendError(ctx.res, 400, 'Invalid JSON.', { code: 'invalid_json' });
      }
    }
    const mcp = await build(p.id);
    const { StreamableHTTPServerTransport } = await sdk();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    ctx.res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(ctx.req, ctx.res, body);
  };
  server.route('POST', '/mcp', handle);
  server.route('GET', '/mcp', handle);
  server.route('DELETE', '/mcp', handle);
}

/** The MCP server SDK (~200 ms of CPU and ~25 MB), loaded by the first request to /mcp rather than at start. */
let loaded:
  | Promise<{
      McpServer: typeof import('@modelcontextprotocol/sdk/server/mcp.js').McpServer;
      StreamableHTTPServerTransport: typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js').StreamableHTTPServerTransport;
    }>
  | undefined;
function sdk() {
  loaded ??= Promise.all([import('@modelcontextprotocol/sdk/server/mcp.js'), import('@modelcontextprotocol/sdk/server/streamableHttp.js')]).then(([m, t]) => ({
    McpServer: m.McpServer,
    StreamableHTTPServerTransport: t.StreamableHTTPServerTransport,
  }));
  return loaded;
}
