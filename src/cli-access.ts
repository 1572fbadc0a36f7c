import { parseArgs } from 'node:util';

export const ACCESS_USAGE = `usage: switchboard access <list [--status pending|allowed|denied] | approve CODE | allow CHANNEL SENDER | deny CHANNEL SENDER> [--json]

Talks to the running gateway: SWITCHBOARD_URL and SWITCHBOARD_OPERATOR_KEY.`;

/** `switchboard access …`: pairing requests and who may talk to the agent. */
export async function runAccess(argv: string[], env: Record<string, string | undefined> = process.env, out = process.stdout, err = process.stderr): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' }, status: { type: 'string' } } });
  } catch (e) {
    err.write(`switchboard access: ${(e as Error).message}\n${ACCESS_USAGE}\n`);
    return 2;
  }
  const [verb, a, b] = parsed.positionals;
  const ok = verb === 'list' || (verb === 'approve' && a) || ((verb === 'allow' || verb === 'deny') && a && b);
  if (!ok) {
    err.write(`${ACCESS_USAGE}\n`);
    return 2;
  }
  const key = env.SWITCHBOARD_OPERATOR_KEY;
  if (!key) {
    err.write('switchboard access: set SWITCHBOARD_OPERATOR_KEY to an operator key\n');
    return 2;
  }
  const base = (env.SWITCHBOARD_URL ?? 'http://127.0.0.1:8787').replace(/\/+$/, '');
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const res = await (verb === 'list'
    ? fetch(`${base}/v1/access${parsed.values.status ? `?status=${encodeURIComponent(parsed.values.status)}` : ''}`, { headers })
    : verb === 'approve'
      ? fetch(`${base}/v1/access/pairing/${encodeURIComponent(a!)}`, { method: 'POST', headers })
      : fetch(`${base}/v1/access`, { method: 'POST', headers, body: JSON.stringify({ channel: a, sender: b, status: verb === 'allow' ? 'allowed' : 'denied' }) })
  ).catch((e: unknown) => e as Error);
  if (res instanceof Error) {
    err.write(`switchboard access: cannot reach the gateway at ${base}: ${res.message}\n`);
    return 1;
  }
  const body = (await res.json().catch(() => ({}))) as { data?: Array<Record<string, unknown>>; error?: { message: string }; channel?: string; sender?: string; status?: string };
  if (!res.ok) {
    err.write(`switchboard access: ${body.error?.message ?? `HTTP ${res.status}`}\n`);
    return 1;
  }
  if (parsed.values.json) out.write(JSON.stringify(body.data ?? body) + '\n');
  else if (verb === 'list') out.write((body.data ?? []).map((r) => `${r.channel}  ${r.sender}  ${r.status}${r.code ? `  code ${r.code}` : ''}`).join('\n') + '\n');
  else out.write(`${body.channel} ${body.sender}: ${body.status}\n`);
  return 0;
}
