/**
 * "Always allow" rules that cannot generalize (issue #18): a rule binds one
 * exact call in one scope, and the request an operator reads shows the whole
 * call, visibly. The engine and the renderers on their own here, the store
 * over both backends (PGlite and Postgres, including the migration of old
 * prefix-wildcard rules); test/approval-rules-e2e.test.ts drives a gateway.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../adapters/db/pg.js';
import { openPglite } from '../adapters/db/pglite.js';
import type { Db } from '../adapters/db/port.js';
import { ApprovalStore, argsHash } from '../adapters/store/approvals.js';
import { migrate } from '../adapters/store/migrate.js';
import { approvalRows } from '../channels/discord/approvals.js';
import { approvalBlocks } from '../channels/slack/approvals.js';
import { migrationsDir } from '../kernel/paths.js';
import { normalizeCommand } from '../moat/approval-command.js';
import { visibleText } from '../moat/approval-display.js';
import {
  type AllowRule,
  type ApprovalPolicy,
  canonicalJson,
  checkVariable,
  decide,
  normalizePattern,
  senderKey,
  type ToolCallRequest,
} from '../moat/approval-engine.js';
import { approvalInfo, approvalRequestText } from '../src/approvals/render.js';
import { createTestDatabase, type TestDatabase } from './support/postgres.js';

const TAR = 'tar -czf backup.tgz *';
const A = { conversationId: 'conv-A', sender: 'http:alice' };
const B = { conversationId: 'conv-B', sender: 'http:alice' };
const C = { conversationId: 'conv-C', sender: 'http:bob' };

const shell = (command: string): ToolCallRequest => ({ tool: 'shell_exec', effect: 'exec', args: { command }, command });
/** The rule an operator's "ALWAYS" makes from an approved call. */
const ruleFor = (call: ToolCallRequest, scope: AllowRule['scope'], scopeKey: string, variable: number[] = []): AllowRule => ({
  id: 1,
  tool: call.tool,
  pattern: normalizePattern(call),
  scope,
  scopeKey,
  variable,
  kind: call.command !== undefined ? 'command' : 'args',
});
const policy = (rules: AllowRule[], where?: ApprovalPolicy['where']): ApprovalPolicy => ({ autonomy: 'supervised', rules, ...(where ? { where } : {}) });

describe('what an "always allow" rule for `tar -czf backup.tgz *` allows', () => {
  const rule = ruleFor(shell(TAR), 'conversation', A.conversationId);

  it('asks first, and offers a rule: it is one simple command', () => {
    const v = decide(shell(TAR), policy([], A));
    expect(v).toMatchObject({ decision: 'ask', tier: 'caution', rulePermitted: true });
  });

  it('allows the exact command again, however it is spaced or quoted', () => {
    for (const same of [TAR, `  tar   -czf backup.tgz *  `, `tar -czf 'backup.tgz' *`, `tar "-czf" backup.tgz *;`]) {
      expect(decide(shell(same), policy([rule], A)), same).toMatchObject({ decision: 'allow', rule: { id: 1 } });
    }
  });

  it.each([
    [
      'the incident: an added checkpoint action and a chained truncate',
      `${TAR} --checkpoint=1 --checkpoint-action=exec=sh\\ evil.sh ; truncate -s 0 notes.txt`,
    ],
    ['an added option', `${TAR} --checkpoint=1 --checkpoint-action=exec=sh\\ evil.sh`],
    ['an added option before the operands', 'tar -czf backup.tgz --remove-files *'],
    ['another flag cluster', 'tar -czvf backup.tgz *'],
    ['a quoted star instead of the glob', "tar -czf backup.tgz '*'"],
    ['another operand', 'tar -czf backup.tgz /etc'],
    ['fewer words', 'tar -czf backup.tgz'],
    ['chained after 300 spaces', `${TAR}${' '.repeat(300)}; truncate -s 0 notes.txt`],
    ['chained with &&', `${TAR} && rm -f notes.txt`],
    ['chained with ||', `${TAR} || rm -f notes.txt`],
    ['chained on a new line', `${TAR}\nrm -f notes.txt`],
    ['piped', `${TAR} | tee log.txt`],
    ['backgrounded', `${TAR} &`],
    ['redirected to a file', `${TAR} > log.txt`],
    ['substituted with $()', 'tar -czf backup.tgz $(cat list.txt)'],
    ['substituted with backticks', 'tar -czf backup.tgz `cat list.txt`'],
    ['process substitution', 'tar -czf backup.tgz -T <(ls)'],
    ['a variable', 'tar -czf $OUT *'],
    ['an environment prefix', `TAR_OPTIONS=--checkpoint-action=exec=sh ${TAR}`],
    ['a subshell', `(${TAR})`],
    ['a comment', `${TAR} # harmless`],
  ])('asks again for %s', (_what, command) => {
    const v = decide(shell(command), policy([rule], A));
    expect(v.decision).toBe('ask');
    expect(v.rule).toBeUndefined();
  });

  it('never offers a rule for a chained, piped, backgrounded, redirected or substituted command, and says why', () => {
    for (const [command, why] of [
      [`${TAR}${' '.repeat(300)}; truncate -s 0 notes.txt`, /more than one command/],
      [`${TAR} | tee log.txt`, /pipeline/],
      [`${TAR} &`, /background/],
      [`${TAR} > log.txt`, /redirects/],
      ['tar -czf backup.tgz $(cat list.txt)', /substitution/],
      ['tar -czf backup.tgz `cat list.txt`', /substitution/],
      ["echo $'\\x1b[8m' hidden", /ANSI-C/],
    ] as const) {
      const v = decide(shell(command), policy([], A));
      expect(v.rulePermitted, command).toBe(false);
      expect(v.reasons.join('; ')).toMatch(why);
    }
  });

  it('holds in its conversation only; sender and global rules reach further, explicitly', () => {
    expect(decide(shell(TAR), policy([rule], B)).decision).toBe('ask');
    expect(decide(shell(TAR), policy([rule])).decision).toBe('ask'); // nowhere known: only global rules
    const sender = ruleFor(shell(TAR), 'sender', A.sender);
    expect(decide(shell(TAR), policy([sender], B)).decision).toBe('allow');
    expect(decide(shell(TAR), policy([sender], C)).decision).toBe('ask');
    const global = ruleFor(shell(TAR), 'global', '');
    expect(decide(shell(TAR), policy([global], C)).decision).toBe('allow');
    // Even a global rule is exact.
    expect(decide(shell(`${TAR} --checkpoint-action=exec=sh`), policy([global], C)).decision).toBe('ask');
    // A rule without a scope (or a conversation rule without a key) applies nowhere.
    expect(decide(shell(TAR), policy([{ tool: 'shell_exec', pattern: TAR } as AllowRule], A)).decision).toBe('ask');
    expect(decide(shell(TAR), policy([ruleFor(shell(TAR), 'conversation', '')], { conversationId: '', sender: '' })).decision).toBe('ask');
  });

  it('never lifts the dangerous or blocked tiers', () => {
    const rm = shell('rm -rf /');
    expect(decide(rm, policy([ruleFor(rm, 'global', '')], A))).toMatchObject({ decision: 'deny', rulePermitted: false });
  });
});

describe('variable word positions, when a rule says so', () => {
  const touch = shell('touch notes.txt');

  it('let a marked operand vary, to another plain value only', () => {
    const rule = ruleFor(touch, 'conversation', A.conversationId, [1]);
    expect(decide(shell('touch todo.txt'), policy([rule], A)).decision).toBe('allow');
    expect(decide(shell("touch 'my notes.txt'"), policy([rule], A)).decision).toBe('allow');
    for (const wider of [
      'touch -r /etc/passwd',
      'touch --no-create',
      'touch *',
      'touch ~',
      'touch notes.txt todo.txt',
      'touch -a notes.txt',
      'touch {a,b}.txt',
    ]) {
      expect(decide(shell(wider), policy([rule], A)).decision, wider).toBe('ask');
    }
    // Unmarked positions stay exact.
    expect(decide(shell('touch notes.txt'), policy([ruleFor(shell('cp notes.txt backup.txt'), 'global', '', [2])], A)).decision).toBe('ask');
    expect(decide(shell('cp notes.txt other.txt'), policy([ruleFor(shell('cp notes.txt backup.txt'), 'global', '', [2])], A)).decision).toBe('allow');
    expect(decide(shell('cp todo.txt backup.txt'), policy([ruleFor(shell('cp notes.txt backup.txt'), 'global', '', [2])], A)).decision).toBe('ask');
  });

  it('cannot mark the command name, an option, a glob, or a non-command', () => {
    expect(checkVariable('touch notes.txt', 'command', [1])).toBeNull();
    expect(checkVariable('touch notes.txt', 'command', [0])).toMatch(/not an argument/);
    expect(checkVariable('touch notes.txt', 'command', [2])).toMatch(/not an argument/);
    expect(checkVariable('tar -czf backup.tgz *', 'command', [1])).toMatch(/option/);
    expect(checkVariable('tar -czf backup.tgz *', 'command', [3])).toMatch(/expands/);
    expect(checkVariable('{"path":"a"}', 'args', [1])).toMatch(/only a shell command/);
  });
});

describe('non-shell tools', () => {
  it('bind the tool and its canonical (sorted-key) arguments exactly', () => {
    const write = (args: unknown): ToolCallRequest => ({ tool: 'file_write', effect: 'write', args });
    const rule = ruleFor(write({ path: 'notes.txt', content: 'hi' }), 'conversation', A.conversationId);
    expect(rule.pattern).toBe(canonicalJson({ content: 'hi', path: 'notes.txt' }));
    expect(decide(write({ content: 'hi', path: 'notes.txt' }), policy([rule], A)).decision).toBe('allow');
    expect(decide(write({ path: 'notes.txt', content: 'hi!' }), policy([rule], A)).decision).toBe('ask');
    expect(decide(write({ path: 'notes.txt', content: 'hi', append: true }), policy([rule], A)).decision).toBe('ask');
    expect(decide({ ...write({ path: 'notes.txt', content: 'hi' }), tool: 'other_write' }, policy([rule], A)).decision).toBe('ask');
  });
});

describe('normalized commands', () => {
  it('spell the same call the same way, and keep quoted and unquoted specials apart', () => {
    const text = (c: string) => {
      const r = normalizeCommand(c);
      return r.ok ? r.text : `not matchable: ${r.reason}`;
    };
    expect(text(`tar -czf "backup.tgz" *`)).toBe(TAR);
    expect(text(`echo "a b"  c\\ d`)).toBe("echo 'a b' 'c d'");
    expect(text(`echo '*' *`)).toBe("echo '*' *");
    expect(text(`'if' x`)).toBe("'if' x");
    // The canonical text parses back to itself.
    for (const c of [TAR, `echo "a b" it\\'s '~' ~ ''`, "printf '%s\\n' x", `grep -e 'a|b' f.txt`]) {
      const once = normalizeCommand(c);
      expect(once.ok, c).toBe(true);
      if (once.ok) expect(normalizeCommand(once.text)).toEqual(once);
    }
  });
});

describe('the request an operator reads', () => {
  const row = (command: string, code = 'K7Q4P') => {
    const call = shell(command);
    const v = decide(call, policy([], A));
    return { code, tool: 'shell_exec', tier: v.tier, args: call.args, reasons: v.reasons, rulePermitted: v.rulePermitted, conversationId: A.conversationId };
  };

  it('shows the chained command hidden behind 300 spaces, and no ALWAYS', () => {
    const text = approvalRequestText(row(`${TAR}${' '.repeat(300)}; truncate -s 0 notes.txt`));
    expect(text).toContain('`tar -czf backup.tgz *␠×300; truncate -s 0 notes.txt`');
    expect(text).toContain('Reply YES K7Q4P to approve or NO K7Q4P to refuse');
    expect(text).not.toMatch(/ALWAYS/);
    expect(text).toMatch(/"Always allow" is not offered for this call: it runs more than one command/);
  });

  it('offers ALWAYS for an exact, simple command, saying it is this call in this conversation', () => {
    const text = approvalRequestText(row(TAR));
    expect(text).toContain('`tar -czf backup.tgz *`');
    expect(text).toMatch(/ALWAYS K7Q4P allows exactly this call from now on in this conversation/);
  });

  it('collapses long text around a marker saying how much and where it is shown in full, keeping the tail', () => {
    const long = `echo ${'A'.repeat(3000)}; rm -f notes.txt`;
    const text = approvalRequestText(row(long));
    expect(text.length).toBeLessThan(1200);
    const m = /…\[(\d+) more characters, shown in full by switchboard approvals show K7Q4P and in the console\]…/.exec(text);
    expect(m).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThan(2000);
    expect(text).toContain('; rm -f notes.txt`');
    expect(text).not.toMatch(/ALWAYS/);
  });

  it('makes invisible and control characters visible', () => {
    const sneaky = 'touch "report\u202Etxt.sh"\u200B\tnotes.txt \x1b[8mhidden\x1b[0m\r\nrm -f notes.txt\uFEFF';
    const text = approvalRequestText(row(sneaky));
    expect(text).toContain('report\\u{202E}txt.sh');
    expect(text).toContain('\\u{200B}\\tnotes.txt');
    expect(text).toContain('\\x1b[8mhidden\\x1b[0m\\r\\nrm -f notes.txt\\u{FEFF}');
    expect(text).not.toMatch(/[\u200B\u202E\uFEFF\x1b\t\r\n]/);
    expect(text).not.toMatch(/ALWAYS/);
    // A real backslash-n stays distinguishable from a new line.
    expect(visibleText('printf "a\\nb"')).toBe('printf "a\\\\nb"');
    expect(visibleText('a\n\n\n\nb')).toBe('a\\n×4b');
  });

  it('Slack and Discord offer "Always allow" only when permitted', () => {
    const now = new Date(Date.now() + 60_000);
    const info = (command: string) => approvalInfo({ ...row(command), expiresAt: now } as never);
    const slackActions = (command: string) =>
      (approvalBlocks(info(command)).blocks.find((b) => b.type === 'actions') as { elements: Array<{ action_id: string }> }).elements.map((e) => e.action_id);
    expect(slackActions(TAR)).toEqual(['sb_approve', 'sb_deny', 'sb_always']);
    expect(slackActions(`${TAR} | tee log.txt`)).toEqual(['sb_approve', 'sb_deny']);
    expect(slackActions(`${TAR}${' '.repeat(300)}; truncate -s 0 notes.txt`)).toEqual(['sb_approve', 'sb_deny']);
    const shown = JSON.stringify(approvalBlocks(info(`${TAR}${' '.repeat(300)}; truncate -s 0 notes.txt`)).blocks);
    expect(shown).toContain('␠×300; truncate -s 0 notes.txt');
    // Reasons quote the command: invisible characters in them are made visible too.
    const sneaky = JSON.stringify(approvalBlocks(info('touch "report\u202Etxt.sh"\u200B notes.txt')).blocks);
    expect(sneaky).toContain('report\\\\u{202E}txt.sh');
    expect(sneaky).not.toMatch(/[\u200B\u202E]/);
    const discord = (command: string) =>
      approvalRows([{ code: 'K7Q4P', tool: 'shell_exec', alwaysPermitted: info(command).alwaysPermitted === true }])[0]!.components.map(
        (c) => (c as { label: string }).label,
      );
    expect(discord(TAR)).toEqual(['Approve K7Q4P', 'Refuse', 'Always allow']);
    expect(discord('tar -czf backup.tgz $(cat list.txt)')).toEqual(['Approve K7Q4P', 'Refuse']);
  });
});

// -------------------------------------------------------------------------------------------
// The store, over both backends

interface Backend {
  name: string;
  open(): Promise<Db>;
  close(): Promise<void>;
}
let pgdb: TestDatabase | undefined;
const backends: Backend[] = [
  { name: 'pglite', open: () => openPglite(), close: async () => {} },
  {
    name: 'postgres',
    open: async () => {
      pgdb ??= await createTestDatabase();
      return openPostgres(pgdb.url);
    },
    close: async () => {
      await pgdb?.drop();
      pgdb = undefined;
    },
  },
];

/** Applies the migrations before 009 only, as a gateway of the old version left the database. */
async function migrateBefore009(db: Db): Promise<void> {
  await db.query('create table if not exists schema_migrations (version text primary key, applied_at timestamptz not null default now())');
  for (const f of readdirSync(migrationsDir)
    .filter((x) => x.endsWith('.sql') && x < '009')
    .sort()) {
    for (const stmt of readFileSync(join(migrationsDir, f), 'utf8')
      .split(/;\s*$/m)
      .map((s) => s.replace(/^\s*--.*$/gm, '').trim())
      .filter(Boolean))
      await db.query(stmt);
    await db.query('insert into schema_migrations (version) values ($1)', [f]);
  }
}

describe.each(backends)('allow rules in the store: $name', (backend) => {
  let db: Db;
  beforeAll(async () => {
    db = await backend.open();
  });
  afterAll(async () => {
    await db?.close();
    await backend.close();
  });

  it('old prefix-wildcard rules stop being wildcards: each allows its own text, in the conversation it was approved in', async () => {
    await migrateBefore009(db);
    for (const id of ['conv-A', 'conv-B']) await db.query(`insert into conversations (id, key, channel) values ($1, $2, 'http')`, [id, `http/key/${id}`]);
    // What the old version stored for an "Always" on tar -czf backup.tgz * in conversation A.
    await db.query(
      `insert into approvals (id, code, conversation_id, turn_id, tool_call_id, tool, args, args_hash, pattern, tier, channel, status, always, decided_at, expires_at)
       values ('ap_old', 'K7Q4P', 'conv-A', 't1', 'c1', 'shell_exec', $1, $2, $3, 'caution', 'http', 'executed', true, now(), now())`,
      [JSON.stringify({ command: TAR }), argsHash(canonicalJson({ command: TAR })), TAR],
    );
    await db.query(
      `insert into allow_rules (tool, pattern, created_by) values ('shell_exec', $1, 'http:op'), ('shell_exec', '*', 'http:op'), ('shell_exec', 'echo one >> log.txt', 'http:op')`,
      [TAR],
    );
    const report = await migrate(db);
    expect(report.applied).toContain('009_allow_rule_scope.sql');

    const store = new ApprovalStore(db);
    const rules = await store.rules();
    expect(rules.map((r) => [r.pattern, r.scope, r.scopeKey])).toEqual([
      [TAR, 'conversation', 'conv-A'],
      ['*', 'conversation', ''],
      ['echo one >> log.txt', 'conversation', ''],
    ]);
    const asEngine = (where: { conversationId: string; sender: string }) => store.rulesFor(where.conversationId, where.sender);
    const inA = await asEngine(A);
    expect(decide(shell(TAR), policy(inA, A)).decision).toBe('allow');
    expect(decide(shell(`${TAR} --checkpoint=1 --checkpoint-action=exec=sh\\ evil.sh ; truncate -s 0 notes.txt`), policy(inA, A)).decision).toBe('ask');
    expect(decide(shell(`${TAR} --checkpoint-action=exec=sh`), policy(inA, A)).decision).toBe('ask');
    expect(decide(shell('rm -f notes.txt'), policy(inA, A)).decision).toBe('ask'); // the old "*" matches nothing
    expect(decide(shell('echo one >> log.txt'), policy(inA, A)).decision).toBe('ask');
    expect(decide(shell(TAR), policy(await asEngine(B), B)).decision).toBe('ask');
  });

  it('adds, finds by scope, keeps one row per exact rule, and deletes', async () => {
    const store = new ApprovalStore(db);
    const conv = await store.addRule({
      tool: 'shell_exec',
      pattern: 'touch notes.txt',
      scope: 'conversation',
      scopeKey: 'conv-B',
      kind: 'command',
      by: 'http:op',
    });
    const again = await store.addRule({
      tool: 'shell_exec',
      pattern: 'touch notes.txt',
      scope: 'conversation',
      scopeKey: 'conv-B',
      kind: 'command',
      by: 'http:op2',
    });
    expect(again.id).toBe(conv.id);
    const varied = await store.addRule({
      tool: 'shell_exec',
      pattern: 'touch notes.txt',
      scope: 'conversation',
      scopeKey: 'conv-B',
      variable: [1],
      kind: 'command',
      by: 'http:op',
    });
    expect(varied.id).not.toBe(conv.id);
    expect(varied.variable).toEqual([1]);
    const sender = await store.addRule({
      tool: 'shell_exec',
      pattern: 'touch notes.txt',
      scope: 'sender',
      scopeKey: senderKey('http', 'bob'),
      kind: 'command',
      by: 'http:op',
    });
    const global = await store.addRule({ tool: 'file_write', pattern: '{"path":"a"}', scope: 'global', scopeKey: '', kind: 'args', by: 'http:op' });
    expect(typeof global.id).toBe('number');
    expect((await store.rulesFor('conv-B', 'http:alice')).map((r) => r.id)).toEqual([conv.id, varied.id, global.id]);
    expect((await store.rulesFor('conv-C', 'http:bob')).map((r) => r.id)).toEqual([sender.id, global.id]);
    expect((await store.deleteRule(varied.id))?.pattern).toBe('touch notes.txt');
    expect(await store.deleteRule(varied.id)).toBeUndefined();
    expect((await store.rulesFor('conv-B', 'http:alice')).map((r) => r.id)).toEqual([conv.id, global.id]);
  });
});
