import { parseArgs } from 'node:util';
import { visibleText } from '../../moat/approval-display.js';
import { gatewayClient } from './http.js';

export const APPROVALS_USAGE = `usage: switchboard approvals <verb> [--json]
  list                                 pending approvals
  show CODE                            one approval, its arguments in full (invisible characters shown)
  approve CODE [--always [--scope conversation|sender|global] [--vary N]...]
                                       approve; --always also allows exactly this call from now on,
                                       in this conversation unless --scope says otherwise; --vary N
                                       lets the command's word N (1 = first argument) be another
                                       plain value (never an option)
  deny CODE                            refuse
  rules                                the "always allow" rules
  rules delete ID                      delete a rule

Talks to the running gateway's HTTP API: SWITCHBOARD_URL (default http://127.0.0.1:8787)
with the operator key in SWITCHBOARD_OPERATOR_KEY.`;

type Row = Record<string, unknown>;

/** `switchboard approvals …`: the operator's side of approvals, over the gateway's HTTP API. */
export async function runApprovals(
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
      options: { json: { type: 'boolean' }, always: { type: 'boolean' }, scope: { type: 'string' }, vary: { type: 'string', multiple: true } },
    });
  } catch (e) {
    err.write(`switchboard approvals: ${(e as Error).message}\n${APPROVALS_USAGE}\n`);
    return 2;
  }
  const [verb, arg, ...extra] = parsed.positionals;
  const { json = false, always = false, scope, vary = [] } = parsed.values;
  const usage = (why?: string) => {
    err.write(`${why ? `switchboard approvals: ${why}\n` : ''}${APPROVALS_USAGE}\n`);
    return 2;
  };
  const noArgs = verb === 'list' || (verb === 'rules' && arg === undefined);
  if (!verb || !['list', 'show', 'approve', 'deny', 'rules'].includes(verb)) return usage();
  if (verb === 'rules' && arg !== undefined && (arg !== 'delete' || extra.length !== 1)) return usage();
  if (verb !== 'rules' && (extra.length || (noArgs ? arg !== undefined : !arg))) return usage();
  if ((scope !== undefined || vary.length) && !(verb === 'approve' && always)) return usage('--scope and --vary go with approve --always');
  if (scope !== undefined && !['conversation', 'sender', 'global'].includes(scope)) return usage('--scope is conversation, sender or global');
  const variable = vary.map((v) => Number(v));
  if (variable.some((v) => !Number.isInteger(v) || v < 1)) return usage('--vary takes a word position (1 = the first argument)');

  const gw = gatewayClient('approvals', env, { out, err, json });
  if (!gw) return 2;
  const write = (s: string) => out.write(s.endsWith('\n') ? s : `${s}\n`);

  if (verb === 'list') {
    const body = await gw.call<{ data?: Row[] }>('/v1/approvals');
    if (!body) return 1;
    const data = body.data ?? [];
    if (json) write(JSON.stringify(data));
    else if (!data.length) write('no pending approvals');
    else
      for (const a of data)
        write(
          `${a.code}  ${a.tier}  ${a.tool} ${a.shown ?? JSON.stringify(a.arguments)}  conversation ${a.conversation}  expires ${a.expiresAt}${a.alwaysPermitted ? '' : '  (no always)'}`,
        );
    return 0;
  }

  if (verb === 'show') {
    const a = await gw.call<Row>(`/v1/approvals/${encodeURIComponent(arg!)}`);
    if (!a) return 1;
    if (json) write(JSON.stringify(a));
    else {
      // Reasons quote the command: they are made visible too.
      const why = ((a.reasons as string[] | undefined) ?? []).map(visibleText).join('; ');
      write(
        [
          `${a.code}  ${a.status}  ${a.tier}  ${a.tool}  conversation ${a.conversation}`,
          `arguments (in full; invisible and control characters shown as escapes, runs of spaces as ␠×N):`,
          `  ${a.shown}`,
          ...(why ? [`reasons: ${why}`] : []),
          `always allow: ${a.alwaysPermitted ? 'possible (exactly this call)' : 'not offered'}`,
        ].join('\n'),
      );
    }
    return 0;
  }

  if (verb === 'rules') {
    if (arg === 'delete') {
      const body = await gw.call<{ message?: string }>(`/v1/approvals/rules/${encodeURIComponent(extra[0]!.replace(/^#/, ''))}`, { method: 'DELETE' });
      if (!body) return 1;
      write(json ? JSON.stringify(body) : (body.message ?? 'deleted'));
      return 0;
    }
    const body = await gw.call<{ data?: Row[] }>('/v1/approvals/rules');
    if (!body) return 1;
    const data = body.data ?? [];
    if (json) write(JSON.stringify(data));
    else if (!data.length) write('no rules');
    else
      for (const r of data)
        write(
          `#${r.id}  ${r.tool}  ${r.shown ?? r.pattern}  ${scopeText(r)}${(r.variable as number[]).length ? `  variable: ${(r.variable as number[]).join(',')}` : ''}  by ${r.createdBy} ${r.createdAt}`,
        );
    return 0;
  }

  const decision = verb === 'deny' ? 'deny' : always ? 'always' : 'approve';
  const body = await gw.call<{ message?: string }>(`/v1/approvals/${encodeURIComponent(arg!)}`, {
    body: { decision, ...(scope ? { scope } : {}), ...(variable.length ? { variable } : {}) },
  });
  if (!body) return 1;
  write(json ? JSON.stringify(body) : `${body.message}`);
  return 0;
}

function scopeText(r: Row): string {
  if (r.scope === 'global') return 'global';
  if (r.scope === 'sender') return `sender ${r.scopeKey}`;
  if (!r.scopeKey) return 'conversation (unknown: matches nothing)';
  return `conversation ${r.conversationKey ?? r.scopeKey}`;
}
