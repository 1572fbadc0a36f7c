import { rmSync } from 'node:fs';
import type { ConversationExport, DataRightsRepository, ErasureReport } from '../../adapters/store/ports/data-rights.js';
import type { GatewayStore } from '../../adapters/store/ports/index.js';
import { conversationKey } from '../../kernel/envelope.js';
import { errorCode } from '../../kernel/errors.js';
import { parseIdentity } from '../../kernel/identity.js';
import { workspaceFor } from '../../tools/workspace.js';
import type { ApiKeyAuth, Principal } from '../http/auth.js';
import { sendError } from '../http/errors.js';
import { type HttpServer, type RequestContext, sendJson } from '../http/server.js';
import { exportMarkdown } from './export-markdown.js';

export interface DataRightsApiDeps {
  auth: ApiKeyAuth;
  store: GatewayStore;
  rights: DataRightsRepository;
  /** Where conversations' tool workspaces are (an erased conversation's folder goes too). */
  dataDir: string;
}

/**
 * Export and erasure over HTTP (GDPR-style access and erasure requests): a key reads and erases its
 * own conversations by name, an operator any conversation by id, a sender's data, or everything.
 */
export function registerDataRightsApi(server: HttpServer, deps: DataRightsApiDeps): void {
  const who = (ctx: RequestContext): Principal | null => {
    const p = deps.auth.authenticate(ctx.req);
    if (!p) sendError(ctx.res, 401, 'Incorrect API key provided.', { code: 'invalid_api_key' });
    return p;
  };
  const operator = (ctx: RequestContext): Principal | null => {
    const p = who(ctx);
    if (p && !p.operator) {
      sendError(ctx.res, 403, 'This needs an operator key.', { type: 'permission_error', code: 'not_operator' });
      return null;
    }
    return p;
  };
  const format = (ctx: RequestContext): 'json' | 'markdown' | null => {
    const f = ctx.url.searchParams.get('format') ?? 'json';
    if (f === 'json' || f === 'markdown') return f;
    sendError(ctx.res, 400, '"format" is json or markdown.', { param: 'format', code: 'invalid_value' });
    return null;
  };
  const conversationOf = async (ctx: RequestContext, p: Principal) => {
    const name = ctx.params.conversation!;
    const conv =
      (await deps.store.conversationByKey(conversationKey({ channel: 'http', workspace: p.id, chat: name }))) ??
      (p.operator ? await deps.store.conversation(name) : undefined);
    if (!conv) sendError(ctx.res, 404, `Conversation '${name}' not found.`, { code: 'conversation_not_found' });
    return conv;
  };
  const senderOf = (ctx: RequestContext): string | null => {
    const raw = ctx.params.sender!;
    const id = parseIdentity(raw);
    if (!id) {
      sendError(ctx.res, 400, `'${raw}' is not a sender identity (channel:id, e.g. slack:T0123:U0456 or sms:+15550100).`, {
        param: 'sender',
        code: 'invalid_value',
      });
      return null;
    }
    return raw;
  };
  const sendExports = (ctx: RequestContext, f: 'json' | 'markdown', list: ConversationExport[], extra: Record<string, unknown>) => {
    if (f === 'markdown') {
      ctx.res.writeHead(200, { 'content-type': 'text/markdown; charset=utf-8' });
      ctx.res.end(list.map(exportMarkdown).join('\n---\n\n'));
      return;
    }
    sendJson(ctx.res, 200, { object: 'export', ...extra, conversations: list });
  };
  const exportsOf = async (ids: string[], only?: string) => {
    const out: ConversationExport[] = [];
    for (const id of ids) {
      const e = await deps.rights.exportConversation(id);
      if (e) out.push(only ? ownPart(e, only) : e);
    }
    return out;
  };
  const removeWorkspaces = (ids: string[]) => {
    for (const id of ids) rmSync(workspaceFor(deps.dataDir, id), { recursive: true, force: true });
  };
  const erase = async (ctx: RequestContext, run: () => Promise<ErasureReport>) => {
    try {
      return await run();
    } catch (err) {
      if (errorCode(err) !== 'conversation_busy') throw err;
      sendError(ctx.res, 409, `${(err as Error).message}.`, { code: 'conversation_busy' }, { 'retry-after': '5' });
      return null;
    }
  };
  const by = (p: Principal) => (p.operator ? `operator:${p.id}` : `http:${p.id}`);

  server.route('GET', '/v1/conversations/:conversation/export', async (ctx) => {
    const p = who(ctx);
    const f = p && format(ctx);
    if (!p || !f) return;
    const conv = await conversationOf(ctx, p);
    if (!conv) return;
    const e = await deps.rights.exportConversation(conv.id);
    if (!e) return sendError(ctx.res, 404, `Conversation '${ctx.params.conversation}' not found.`, { code: 'conversation_not_found' });
    if (f === 'markdown') return sendExports(ctx, f, [e], {});
    sendJson(ctx.res, 200, { object: 'conversation.export', ...e });
  });

  server.route('DELETE', '/v1/conversations/:conversation', async (ctx) => {
    const p = who(ctx);
    if (!p) return;
    const conv = await conversationOf(ctx, p);
    if (!conv) return;
    const report = await erase(ctx, () => deps.rights.eraseConversation(conv.id, by(p)));
    if (!report) return;
    removeWorkspaces(report.conversations);
    sendJson(ctx.res, 200, { object: 'conversation.erased', conversation: ctx.params.conversation, id: conv.id, rows: report.rows });
  });

  server.route('GET', '/v1/senders/:sender/export', async (ctx) => {
    const p = operator(ctx);
    const f = p && format(ctx);
    const sender = p && f && senderOf(ctx);
    if (!sender || !f) return;
    sendExports(ctx, f, await exportsOf(await deps.rights.conversationsOf(sender), sender), { sender });
  });

  server.route('DELETE', '/v1/senders/:sender', async (ctx) => {
    const p = operator(ctx);
    const sender = p && senderOf(ctx);
    if (!p || !sender) return;
    const report = await erase(ctx, () => deps.rights.eraseSender(sender, by(p)));
    if (!report) return;
    removeWorkspaces(report.conversations);
    sendJson(ctx.res, 200, { object: 'sender.erased', sender, conversations: report.conversations, rows: report.rows });
  });

  server.route('GET', '/v1/export', async (ctx) => {
    const p = operator(ctx);
    const f = p && format(ctx);
    if (!f) return;
    sendExports(ctx, f, await exportsOf(await deps.rights.allConversations()), {});
  });
}

/** A shared conversation as one of its senders may have it: their own turns only (their messages and the replies to them). */
function ownPart(e: ConversationExport, sender: string): ConversationExport {
  if (e.senders.length <= 1) return e;
  const turns = new Set(e.messages.filter((m) => m.role === 'user' && m.author === sender).map((m) => m.turn));
  const messages = e.messages.filter((m) => m.turn !== null && turns.has(m.turn));
  return {
    ...e,
    senders: [sender],
    messages,
    approvals: e.approvals.filter((a) => a.requester === sender),
    turns: e.turns.filter((t) => turns.has(t.id)),
  };
}
