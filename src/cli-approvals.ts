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
  const base = (env.SWITCHBOARD_URL ?? 'http://127.0.0.1:8787').replace(/\/+$/, '');
  const key = env.SWITCHBOARD_OPERATOR_KEY;
  if (!verb || extra.length || (verb === 'list' ? code !== undefined : !code) || !['list', 'approve', 'deny'].includes(verb)) {
    err.write(`${APPROVALS_USAGE}\n`);
    return 2;
  }
  if (!key) {
    err.write('switchboard approvals: set SWITCHBOARD_OPERATOR_KEY to an operator key (SWITCHBOARD_OPERATOR_KEYS on the gateway)\n');
    return 2;
  }
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  let res: Response;
  try {
    res =
      verb === 'list'
        ? await fetch(`${base}/v1/approvals`, { headers })
        : await fetch(`${base}/v1/approvals/${encodeURIComponent(code!)}`, { method: 'POST', headers, body: JSON.stringify({ decision: verb === 'deny' ? 'deny' : parsed.values.always ? 'always' : 'approve' }) });
  } catch (e) {
    err.write(`switchboard approvals: cannot reach the gateway at ${base}: ${(e as Error).message}\n`);
    return 1;
  }
  const body = (await res.json().catch(() => ({}))) as { data?: Array<Record<string, unknown>>; message?: string; error?: { message: string; code?: string } };
  if (!res.ok) {
    if (json) out.write(JSON.stringify({ ok: false, status: res.status, error: body.error ?? null }) + '\n');
    else err.write(`switchboard approvals: ${body.error?.message ?? `HTTP ${res.status}`}\n`);
    return 1;
  }
  if (verb === 'list') {
    const data = body.data ?? [];
    if (json) out.write(JSON.stringify(data) + '\n');
    else if (!data.length) out.write('no pending approvals\n');
    else for (const a of data) out.write(`${a.code}  ${a.tier}  ${a.tool} ${JSON.stringify(a.arguments)}  conversation ${a.conversation}  expires ${a.expiresAt}\n`);
    return 0;
  }
  out.write(json ? JSON.stringify(body) + '\n' : `${body.message}\n`);
  return 0;
}
