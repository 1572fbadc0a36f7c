import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { ConversationExport } from '../../adapters/store/ports/data-rights.js';
import { exportMarkdown } from '../../src/api/export-markdown.js';
import { gatewayClient } from './http.js';

export const EXPORT_USAGE = `usage: switchboard export (--conversation ID | --sender CHANNEL:ID | --all) [--format json|markdown] [--out FILE]
  a conversation (its internal id, as the console and /v1/conversations show it), everything of one
  sender (their conversations; in shared ones their own turns), or every conversation: messages with
  who said them, tool calls with their results, approvals, usage

usage: switchboard erase (--conversation ID | --sender CHANNEL:ID) --yes [--json]
  deletes the conversation (rows and tool workspace), or the sender's data: every conversation only
  they wrote in, their messages in shared ones (replaced by a marker), their notes, access rows and
  rules; audited in the ledger (switchboard audit)

Talks to the running gateway: SWITCHBOARD_URL (default http://127.0.0.1:8787), SWITCHBOARD_OPERATOR_KEY.`;

const target = (v: { conversation?: string | undefined; sender?: string | undefined; all?: boolean | undefined }) =>
  [v.conversation !== undefined, v.sender !== undefined, v.all === true].filter(Boolean).length === 1;

/** `switchboard export …`: a transcript export through the running gateway. */
export async function runExport(argv: string[], env = process.env, out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr) {
  let v;
  try {
    v = parseArgs({
      args: argv,
      options: { conversation: { type: 'string' }, sender: { type: 'string' }, all: { type: 'boolean' }, format: { type: 'string' }, out: { type: 'string' } },
    }).values;
  } catch (e) {
    err.write(`switchboard export: ${(e as Error).message}\n${EXPORT_USAGE}\n`);
    return 2;
  }
  const format = v.format ?? 'json';
  if (!target(v) || !['json', 'markdown'].includes(format)) {
    err.write(`${EXPORT_USAGE}\n`);
    return 2;
  }
  const gw = gatewayClient('export', env, { out, err });
  if (!gw) return 2;
  const path = v.conversation
    ? `/v1/conversations/${encodeURIComponent(v.conversation)}/export`
    : v.sender
      ? `/v1/senders/${encodeURIComponent(v.sender)}/export`
      : '/v1/export';
  const body = await gw.call<ConversationExport & { conversations?: ConversationExport[] }>(path);
  if (!body) return 1;
  const list = v.conversation ? [body] : (body.conversations ?? []);
  const text = format === 'markdown' ? list.map(exportMarkdown).join('\n---\n\n') : `${JSON.stringify(body, null, 2)}\n`;
  if (v.out) writeFileSync(v.out, text, { mode: 0o600 });
  else out.write(text);
  return 0;
}

/** `switchboard erase …`: erasure of a conversation or a sender's data through the running gateway. */
export async function runErase(argv: string[], env = process.env, out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr) {
  let v;
  try {
    v = parseArgs({
      args: argv,
      options: { conversation: { type: 'string' }, sender: { type: 'string' }, yes: { type: 'boolean' }, json: { type: 'boolean' } },
    }).values;
  } catch (e) {
    err.write(`switchboard erase: ${(e as Error).message}\n${EXPORT_USAGE}\n`);
    return 2;
  }
  if (!target(v)) {
    err.write(`${EXPORT_USAGE}\n`);
    return 2;
  }
  if (!v.yes) {
    err.write('switchboard erase: this deletes data for good; add --yes to go ahead\n');
    return 2;
  }
  const gw = gatewayClient('erase', env, { out, err, json: v.json === true });
  if (!gw) return 2;
  const path = v.conversation ? `/v1/conversations/${encodeURIComponent(v.conversation)}` : `/v1/senders/${encodeURIComponent(v.sender!)}`;
  const body = await gw.call<{ rows: Record<string, number>; conversations?: string[] }>(path, { method: 'DELETE' });
  if (!body) return 1;
  if (v.json) out.write(`${JSON.stringify(body)}\n`);
  else {
    const n = Object.values(body.rows).reduce((a, b) => a + b, 0);
    out.write(`erased ${v.conversation ? `conversation ${v.conversation}` : `${v.sender}: ${body.conversations?.length ?? 0} conversations`} (${n} rows)\n`);
  }
  return 0;
}
