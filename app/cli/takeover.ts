import { parseArgs } from 'node:util';
import { gatewayClient } from './http.js';

export const TAKEOVER_USAGE = `usage: switchboard takeover <list | take CONV | say CONV TEXT | handback CONV [--note TEXT]> [--json]
  list                      open requests for a human and active takeovers (--recent N: also the last N closed)
  take CONV                 take a conversation over (its id or key): the agent stops answering it
  say CONV TEXT             write to the user of a conversation you took over (delivered through its channel)
  handback CONV [--note T]  give it back to the agent, with a note the agent reads
Talks to the running gateway: SWITCHBOARD_URL and SWITCHBOARD_OPERATOR_KEY.`;

interface HandoffJson {
  id: string;
  conversation: string;
  conversationKey: string;
  state: string;
  urgency: string;
  reason: string | null;
  operator: string | null;
  requestedAt: string;
  slaDeadline: string | null;
}

const line = (h: HandoffJson) =>
  `${h.id}  ${h.state}  ${h.urgency}  ${h.operator ?? '-'}  ${h.conversation} (${h.conversationKey})${h.slaDeadline && h.state === 'requested' ? `  sla ${h.slaDeadline}` : ''}${h.reason ? `  ${JSON.stringify(h.reason)}` : ''}`;

/** `switchboard takeover …`: human takeover, through the running gateway's /v1/handoffs and /v1/conversations/{id}/… */
export async function runTakeover(
  argv: string[],
  env: Record<string, string | undefined> = process.env,
  out = process.stdout,
  err = process.stderr,
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' }, note: { type: 'string' }, recent: { type: 'string' } } });
  } catch (e) {
    err.write(`switchboard takeover: ${(e as Error).message}\n${TAKEOVER_USAGE}\n`);
    return 2;
  }
  const v = parsed.values;
  const [verb, conv, ...words] = parsed.positionals;
  const text = words.join(' ').trim();
  const ok = verb === 'list' || verb === 'ls' || ((verb === 'take' || verb === 'handback') && conv && !words.length) || (verb === 'say' && conv && text);
  if (!ok) {
    err.write(`${TAKEOVER_USAGE}\n`);
    return 2;
  }
  const gw = gatewayClient('takeover', env, { out, err, json: v.json });
  if (!gw) return 2;
  const path = (what: string) => `/v1/conversations/${encodeURIComponent(conv!)}/${what}`;
  if (verb === 'take') {
    const body = await gw.call<{ handoff: HandoffJson }>(path('takeover'), { body: {} });
    if (!body) return 1;
    out.write(v.json ? `${JSON.stringify(body.handoff)}\n` : `taken over: ${line(body.handoff)}\n`);
    return 0;
  }
  if (verb === 'say') {
    const body = await gw.call<{ id: number; delivered: boolean; handoff: HandoffJson }>(path('operator-messages'), { body: { text } });
    if (!body) return 1;
    out.write(
      v.json
        ? `${JSON.stringify(body)}\n`
        : `sent (message ${body.id}${body.delivered ? ', delivered through the channel' : ', in the conversation for the user to read'})\n`,
    );
    return 0;
  }
  if (verb === 'handback') {
    const body = await gw.call<{ handoff: HandoffJson }>(path('handback'), { body: v.note ? { note: v.note } : {} });
    if (!body) return 1;
    out.write(v.json ? `${JSON.stringify(body.handoff)}\n` : `handed back: ${line(body.handoff)}\n`);
    return 0;
  }
  const recent = v.recent ? `?recent=${encodeURIComponent(v.recent)}` : '';
  const body = await gw.call<{ data: HandoffJson[] }>(`/v1/handoffs${recent}`);
  if (!body) return 1;
  out.write(v.json ? `${JSON.stringify(body.data)}\n` : body.data.length ? `${body.data.map(line).join('\n')}\n` : 'no open handoffs\n');
  return 0;
}
