import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { StreamRecord } from './driver.js';

export interface ChaosReport {
  inboxRows: number;
  lost: number;
  duplicated: number;
  reordered: number;
  /** Tool effects (lines of the conversations' effects.log) that happened more than once. */
  duplicateEffects: number;
  /** Approved or trusted calls whose message was answered but whose effect never happened. */
  missingEffects: number;
  /** Conversations left unable to go on: a message never answered, or a parked turn whose approvals are all decided. */
  wedged: number;
  /** Streamed answers the client saw differently from the stored answer (truncated, repeated, or two attempts mixed). */
  streamsNotTheAnswer: number;
  /** Of those, the ones that showed more than the answer (the same text twice, or two attempts interleaved). */
  interleaved: number;
}

/** What the store and the workspaces say after the run, and what the streaming clients saw. */
export async function checkChaos(o: {
  databaseUrl: string;
  dataDir: string;
  prefix: string;
  unanswered: string[];
  streams: StreamRecord[];
}): Promise<ChaosReport> {
  const db = new pg.Client({ connectionString: o.databaseUrl, application_name: 'chaos-bench' });
  await db.connect();
  try {
    const rows = (
      await db.query<{ conversation_id: string; text: string; done: boolean; seq: number | null; answers: number }>(
        `select i.conversation_id, i.text, (i.consumed_at is not null and t.status = 'done') as done, t.seq,
                (select count(*)::int from messages m where m.conversation_id = i.conversation_id and m.role = 'assistant'
                   and m.content::text like '%' || 'echo: ' || i.text || '"%') as answers
         from inbox i left join turns t on t.id = i.turn_id where i.text like $1 order by i.conversation_id, i.id`,
        [`${o.prefix}-%`],
      )
    ).rows;
    let lost = 0;
    let duplicated = 0;
    let reordered = 0;
    const texts = new Set<string>();
    const answered = new Set<string>();
    for (const r of rows) {
      if (!r.done || r.answers === 0) lost++;
      else answered.add(r.text);
      if (r.answers > 1) duplicated += r.answers - 1;
      if (texts.has(r.text)) duplicated++;
      texts.add(r.text);
    }
    for (let i = 1; i < rows.length; i++) {
      const a = rows[i - 1]!;
      const b = rows[i]!;
      if (a.conversation_id !== b.conversation_id) continue;
      const ma = Number(/-m(\d+)$/.exec(a.text)?.[1]);
      const mb = Number(/-m(\d+)$/.exec(b.text)?.[1]);
      if (mb < ma || (a.seq !== null && b.seq !== null && b.seq < a.seq)) reordered++;
    }

    // Effects: every line of every conversation's effects.log, counted.
    const effects = new Map<string, number>();
    const root = join(o.dataDir, 'workspaces');
    for (const ws of existsSync(root) ? readdirSync(root) : []) {
      const f = join(root, ws, 'effects.log');
      if (!existsSync(f)) continue;
      for (const line of readFileSync(f, 'utf8').split('\n').filter(Boolean)) effects.set(line, (effects.get(line) ?? 0) + 1);
    }
    let duplicateEffects = 0;
    for (const n of effects.values()) if (n > 1) duplicateEffects += n - 1;
    let missingEffects = 0;
    for (const t of answered) if (/-[at]\d+-m\d+$/.test(t) && !effects.has(t)) missingEffects++;

    const stuckParked = (
      await db.query<{ n: number }>(
        `select count(distinct t.conversation_id)::int as n from turns t join conversations c on c.id = t.conversation_id
         where t.status = 'parked' and c.key like $1
           and not exists (select 1 from approvals a where a.turn_id = t.id and a.status = 'pending')`,
        [`%${o.prefix}-%`],
      )
    ).rows[0]!.n;

    const answerOf = new Map<string, string>();
    for (const s of o.streams) answerOf.set(s.text, `echo: ${s.text}`);
    let streamsNotTheAnswer = 0;
    let interleaved = 0;
    for (const s of o.streams) {
      if (s.shown === answerOf.get(s.text)) continue;
      streamsNotTheAnswer++;
      if (s.shown.length > answerOf.get(s.text)!.length) interleaved++;
    }
    return {
      inboxRows: rows.length,
      lost,
      duplicated,
      reordered,
      duplicateEffects,
      missingEffects,
      wedged: o.unanswered.length + stuckParked,
      streamsNotTheAnswer,
      interleaved,
    };
  } finally {
    await db.end();
  }
}
