import { parseArgs } from 'node:util';
import { gatewayClient } from './http.js';

export const SCHEDULE_USAGE = `usage: switchboard schedule <add | ls | rm ID> [--json]
  add --conversation ID|KEY (--cron "0 9 * * 1-5" | --at 2026-12-04T09:00:00+01:00) --tz Europe/Amsterdam --prompt TEXT [--runs-per-day N] [--tokens-per-day N] [--check QUESTION]
  ls                        every schedule with its next tick and last run's status
  rm ID                     delete a schedule (audited)
Talks to the running gateway: SWITCHBOARD_URL and SWITCHBOARD_OPERATOR_KEY.`;

interface ScheduleJson {
  id: string;
  conversation: string;
  kind: string;
  cron: string | null;
  at: string | null;
  tz: string;
  nextAt: string | null;
  lastRun: { tick: string; status: string } | null;
}

const line = (s: ScheduleJson) =>
  `${s.id}  ${s.kind === 'cron' ? `cron "${s.cron}"` : `at ${s.at}`} ${s.tz}  next ${s.nextAt ?? '-'}  last ${s.lastRun ? `${s.lastRun.status} (${s.lastRun.tick})` : '-'}  ${s.conversation}`;

/** `switchboard schedule …`: scheduled messages, through the running gateway's /v1/schedules. */
export async function runSchedule(
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
      options: {
        json: { type: 'boolean' },
        conversation: { type: 'string' },
        cron: { type: 'string' },
        at: { type: 'string' },
        tz: { type: 'string' },
        prompt: { type: 'string' },
        'runs-per-day': { type: 'string' },
        'tokens-per-day': { type: 'string' },
        check: { type: 'string' },
      },
    });
  } catch (e) {
    err.write(`switchboard schedule: ${(e as Error).message}\n${SCHEDULE_USAGE}\n`);
    return 2;
  }
  const v = parsed.values;
  const [verb, id] = parsed.positionals;
  const ok =
    (verb === 'add' && v.conversation && v.prompt && (v.cron || v.at)) || verb === 'ls' || verb === 'list' || ((verb === 'rm' || verb === 'delete') && id);
  if (!ok) {
    err.write(`${SCHEDULE_USAGE}\n`);
    return 2;
  }
  const gw = gatewayClient('schedule', env, { out, err, json: v.json });
  if (!gw) return 2;
  if (verb === 'add') {
    const body = await gw.call<ScheduleJson>('/v1/schedules', {
      body: {
        conversation: v.conversation,
        prompt: v.prompt,
        ...(v.cron ? { cron: v.cron } : {}),
        ...(v.at ? { at: v.at } : {}),
        ...(v.tz ? { tz: v.tz } : {}),
        ...(v['runs-per-day'] ? { runsPerDay: Number(v['runs-per-day']) } : {}),
        ...(v['tokens-per-day'] ? { tokensPerDay: Number(v['tokens-per-day']) } : {}),
        ...(v.check ? { check: v.check } : {}),
      },
    });
    if (!body) return 1;
    out.write(v.json ? `${JSON.stringify(body)}\n` : `scheduled ${line(body)}\n`);
    return 0;
  }
  if (verb === 'rm' || verb === 'delete') {
    const body = await gw.call(`/v1/schedules/${encodeURIComponent(id!)}`, { method: 'DELETE' });
    if (!body) return 1;
    out.write(v.json ? `${JSON.stringify(body)}\n` : `deleted ${id}\n`);
    return 0;
  }
  const body = await gw.call<{ data: ScheduleJson[] }>('/v1/schedules');
  if (!body) return 1;
  out.write(v.json ? `${JSON.stringify(body.data)}\n` : body.data.length ? `${body.data.map(line).join('\n')}\n` : 'no schedules\n');
  return 0;
}
