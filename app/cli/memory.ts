import { parseArgs } from 'node:util';
import { gatewayClient } from './http.js';

export const MEMORY_USAGE = `usage: switchboard memory <list [--scope S] [--key K] | set NOTE [--scope global|conversation|sender] [--key K] [--force] | forget ID> [--json]

Global notes (shown in every conversation) are written only here or with POST /v1/memory;
users can keep notes only about themselves and their conversation. A note is refused when
it holds a secret, or reads as an instruction to the model (--force keeps such a note,
still shown to the model as data, never as an instruction; secrets are refused always).

Talks to the running gateway's HTTP API: SWITCHBOARD_URL (default http://127.0.0.1:8787)
with the operator key in SWITCHBOARD_OPERATOR_KEY.`;

/** `switchboard memory …`: the durable notes, for operators, over the gateway's HTTP API. */
export async function runMemory(
  argv: string[],
  env: Record<string, string | undefined> = process.env,
  out = process.stdout,
  err = process.stderr,
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { json: { type: 'boolean' }, scope: { type: 'string' }, key: { type: 'string' }, force: { type: 'boolean' } },
    });
  } catch (e) {
    err.write(`switchboard memory: ${(e as Error).message}\n${MEMORY_USAGE}\n`);
    return 2;
  }
  const [verb, arg, ...extra] = parsed.positionals;
  const { json, scope, key, force } = parsed.values;
  if (!verb || extra.length || !['list', 'set', 'forget'].includes(verb) || (verb !== 'list' && !arg) || (force && verb !== 'set')) {
    err.write(`${MEMORY_USAGE}\n`);
    return 2;
  }
  const gw = gatewayClient('memory', env, { out, err });
  if (!gw) return 2;
  type Notes = { data?: Array<{ id: number; scope: string; key: string; note: string }>; id?: number; warning?: string };
  const body =
    verb === 'list'
      ? await gw.call<Notes>(`/v1/memory?${new URLSearchParams({ ...(scope ? { scope } : {}), ...(key ? { key } : {}) })}`)
      : verb === 'set'
        ? await gw.call<Notes>('/v1/memory', { body: { note: arg, scope: scope ?? 'global', key, ...(force ? { force: true } : {}) } })
        : await gw.call<Notes>(`/v1/memory/${encodeURIComponent(arg!)}`, { method: 'DELETE' });
  if (!body) return 1;
  if (json) out.write(JSON.stringify(verb === 'list' ? body.data : body) + '\n');
  else if (verb === 'list')
    out.write((body.data ?? []).map((n) => `#${n.id} ${n.scope}${n.key ? `:${n.key}` : ''}  ${n.note}`).join('\n') + (body.data?.length ? '\n' : 'no notes\n'));
  else out.write(verb === 'set' ? `saved #${body.id}${body.warning ? ` (${body.warning})` : ''}\n` : `forgot #${arg}\n`);
  return 0;
}
