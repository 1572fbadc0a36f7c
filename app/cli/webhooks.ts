import { parseArgs } from 'node:util';
import { gatewayClient } from './http.js';

export const WEBHOOKS_USAGE = `usage: switchboard webhooks <list | add ID URL --secret-env VAR --events E1,E2 | dead-letters> [--json]

Events: turn.completed, turn.failed, approval.requested, approval.decided, provider.fallback, schedule.undelivered (or *).
Talks to the running gateway: SWITCHBOARD_URL and SWITCHBOARD_OPERATOR_KEY.`;

/** `switchboard webhooks …`: outbound event subscribers and dead letters. */
export async function runWebhooks(
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
      options: { json: { type: 'boolean' }, 'secret-env': { type: 'string' }, events: { type: 'string' } },
    });
  } catch (e) {
    err.write(`switchboard webhooks: ${(e as Error).message}\n${WEBHOOKS_USAGE}\n`);
    return 2;
  }
  const [verb, id, url] = parsed.positionals;
  if (!verb || !['list', 'add', 'dead-letters'].includes(verb) || (verb === 'add' && (!id || !url || !parsed.values['secret-env'] || !parsed.values.events))) {
    err.write(`${WEBHOOKS_USAGE}\n`);
    return 2;
  }
  const gw = gatewayClient('webhooks', env, { out, err });
  if (!gw) return 2;
  const body = await gw.call<{ data?: unknown[] }>(
    verb === 'add' ? '/v1/events/subscribers' : `/v1/events/${verb === 'list' ? 'subscribers' : 'dead-letters'}`,
    verb === 'add' ? { body: { id, url, secretEnv: parsed.values['secret-env'], events: parsed.values.events!.split(',').map((x) => x.trim()) } } : {},
  );
  if (!body) return 1;
  if (parsed.values.json) out.write(JSON.stringify(body.data ?? body) + '\n');
  else if (verb === 'add') out.write(`subscribed ${id}\n`);
  else out.write((body.data ?? []).map((x) => JSON.stringify(x)).join('\n') + '\n');
  return 0;
}
