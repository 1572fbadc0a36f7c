import { gatewayClient } from './cli-http.js';
import { parseArgs } from 'node:util';

export const APPROVALS_USAGE = `usage: switchboard approvals <list | approve CODE [--always] | deny CODE> [--json]

Talks to the running gateway's HTTP API: SWITCHBOARD_URL (default http://127.0.0.1:8787)
with the operator key in SWITCHBOARD_OPERATOR_KEY.`;

/** `switchboard approvals …`: the operator's side of approvals, over the gateway's HTTP API. */
export async function runApprovals(argv: string[], env: Record<string, string | undefined> = process.env, out = process.stdout, err = process.stderr): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' }, always: { type: 'boolean' } } });
  } catch (e) {
    err.write(`switchboard approvals: ${(e as Error).message}\n${APPROVALS_USAGE}\n`);
    return 2;
  }
  const [verb, code, ...extra] = parsed.positionals;
  const json = parsed.values.json === true;
  if (!verb || extra.length || (verb === 'list' ? code !== undefined : !code) || !['list', 'approve', 'deny'].includes(verb)) {
    err.write(`${APPROVALS_USAGE}\n`);
    return 2;
  }
  const gw = gatewayClient('approvals', env, { out, err, json });
  if (!gw) return 2;
  const body =
    verb === 'list'
      ? await gw.call<{ data?: Array<Record<string, unknown>> }>('/v1/approvals')
      : await gw.call<{ message?: string }>(`/v1/approvals/${encodeURIComponent(code!)}`, { body: { decision: verb === 'deny' ? 'deny' : parsed.values.always ? 'always' : 'approve' } });
  if (!body) return 1;
  if (verb === 'list') {
    const data = (body as { data?: Array<Record<string, unknown>> }).data ?? [];
    if (json) out.write(JSON.stringify(data) + '\n');
    else if (!data.length) out.write('no pending approvals\n');
    else for (const a of data) out.write(`${a.code}  ${a.tier}  ${a.tool} ${JSON.stringify(a.arguments)}  conversation ${a.conversation}  expires ${a.expiresAt}\n`);
    return 0;
  }
  out.write(json ? JSON.stringify(body) + '\n' : `${(body as { message?: string }).message}\n`);
  return 0;
}
