import { parseArgs } from 'node:util';
import { gatewayClient } from './http.js';

export const ACCESS_USAGE = `usage: switchboard access <list [--status pending|allowed|denied] | approve CODE | allow CHANNEL SENDER | deny CHANNEL SENDER> [--json]

Talks to the running gateway: SWITCHBOARD_URL and SWITCHBOARD_OPERATOR_KEY.`;

/** `switchboard access …`: pairing requests and who may talk to the agent. */
export async function runAccess(
  argv: string[],
  env: Record<string, string | undefined> = process.env,
  out = process.stdout,
  err = process.stderr,
): Promise<number> {
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
  const gw = gatewayClient('access', env, { out, err });
  if (!gw) return 2;
  type Rows = { data?: Array<Record<string, unknown>>; channel?: string; sender?: string; status?: string };
  const body =
    verb === 'list'
      ? await gw.call<Rows>(`/v1/access${parsed.values.status ? `?status=${encodeURIComponent(parsed.values.status)}` : ''}`)
      : verb === 'approve'
        ? await gw.call<Rows>(`/v1/access/pairing/${encodeURIComponent(a!)}`, { method: 'POST' })
        : await gw.call<Rows>('/v1/access', { body: { channel: a, sender: b, status: verb === 'allow' ? 'allowed' : 'denied' } });
  if (!body) return 1;
  if (parsed.values.json) out.write(JSON.stringify(body.data ?? body) + '\n');
  else if (verb === 'list')
    out.write((body.data ?? []).map((r) => `${r.channel}  ${r.sender}  ${r.status}${r.code ? `  code ${r.code}` : ''}`).join('\n') + '\n');
  else out.write(`${body.channel} ${body.sender}: ${body.status}\n`);
  return 0;
}
