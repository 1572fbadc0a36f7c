/**
 * "Always allow" rules end to end (issue #18): a gateway with a fake model that
 * runs whatever shell command it is asked to, operators answering in the chat,
 * over the HTTP API and with the real CLI (`switchboard approvals …` from
 * bin/switchboard.js, so `npm run build` first), and the console in a browser.
 * What is asserted is what the user and the operator see: the reply text, the
 * CLI's output, the page.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { packageRoot } from '../kernel/paths.js';
import { workspaceFor } from '../tools/workspace.js';
import { FakeLlm, type FakeRequest, reply, toolCall } from './fakes/fake-llm.js';
import { CHROMIUM, launchChromium } from './support/chromium.js';
import { API_KEY, eventually, OTHER_KEY, openaiClient, startGateway, testConfig } from './support/gateway.js';

const OPERATOR_KEY = 'op-key-rules-0001';
const TAR = 'tar -czf backup.tgz *';
const INCIDENT = `${TAR}${' '.repeat(300)}; truncate -s 0 notes.txt`;
/** "run: CMD" runs CMD; "run-json: {...}" calls shell_exec with exactly those arguments (new lines and all). */
function agentLike(req: FakeRequest) {
  const msgs = req.body.messages as Array<{ role: string; content: unknown }>;
  const last = msgs[msgs.length - 1]!;
  if (last.role === 'tool') return reply(`tool said: ${String(last.content).replace(/\s+/g, ' ').slice(0, 200)}`);
  const text = String(typeof last.content === 'string' ? last.content : JSON.stringify(last.content));
  const j = /^run-json: ([\s\S]+)$/.exec(text);
  if (j) return toolCall('shell_exec', JSON.parse(j[1]!));
  const m = /^run: (.+)$/.exec(text);
  return m ? toolCall('shell_exec', { command: m[1] }) : reply('nothing to run');
}

async function http(gw: string, method: string, path: string, key: string, body?: unknown) {
  const r = await fetch(`${gw}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: r.status, body: (await r.json()) as any };
}

describe('"always allow" rules that cannot generalize', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  let n = 0;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond(agentLike);
    gw = await startGateway(testConfig(fake, {}, { http: { operatorKeys: [OPERATOR_KEY] }, approvals: { timeoutMs: 120_000 } }));
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
  });

  /** A message in a conversation (a fresh one unless named): the reply text and the switchboard object. */
  const say = async (conversation: string, content: string, key = API_KEY) => {
    const r = await openaiClient(gw.url!, key, { 'X-Switchboard-Conversation': conversation }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content }],
    });
    return { text: r.choices[0]!.message.content!, sb: (r as any).switchboard };
  };
  const fresh = (prefix: string) => `${prefix}-${++n}`;
  const finalReply = async (conversation: string, key = API_KEY) =>
    eventually(async () => {
      const r = await http(gw.url!, 'GET', `/v1/conversations/${conversation}/messages`, key);
      const last = r.body.data?.[r.body.data.length - 1];
      return last?.role === 'assistant' && last.content.startsWith('tool said') ? last.content : null;
    });
  const workspace = async (conversation: string) => {
    const conv = (await gw.infra.store.db.query<{ id: string }>(`select id from conversations where key like $1`, [`%/${conversation}/%`])).rows[0]!;
    return workspaceFor(gw.config.dataDir, conv.id);
  };
  /** Asks, expects an approval request, and refuses it (so the conversation is free again). */
  const askedAndRefused = async (conversation: string, content: string, key = API_KEY) => {
    const r = await say(conversation, content, key);
    expect(r.sb.approval, `${content} should be asked`).toBeDefined();
    expect((await http(gw.url!, 'POST', `/v1/approvals/${r.sb.approval.code}`, OPERATOR_KEY, { decision: 'deny' })).status).toBe(200);
    await eventually(async () => {
      const m = await http(gw.url!, 'GET', `/v1/conversations/${conversation}/messages`, key);
      return m.body.data?.at(-1)?.role === 'assistant' && /Not approved|tool said/.test(m.body.data.at(-1).content);
    });
    return r;
  };
  const cli = (...args: string[]) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const p = spawn(process.execPath, [join(packageRoot, 'bin', 'switchboard.js'), 'approvals', ...args], {
        env: { PATH: process.env.PATH ?? '', SWITCHBOARD_URL: gw.url!, SWITCHBOARD_OPERATOR_KEY: OPERATOR_KEY },
      });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (d) => (stdout += d));
      p.stderr.on('data', (d) => (stderr += d));
      p.on('close', (status) => resolve({ status, stdout, stderr }));
    });

  let tarRule: number;

  it('the incident: ALWAYS on `tar -czf backup.tgz *` allows exactly that, in that conversation', async () => {
    const first = await say('tar-a', `run: ${TAR}`);
    const code = first.sb.approval.code as string;
    expect(first.text).toContain('`tar -czf backup.tgz *`');
    // The requester may not approve it (a user key): told who can; the exact rule is offered to the operator.
    expect(first.text).toContain(`An operator must approve this (code ${code})`);
    expect(first.sb.approval.alwaysPermitted).toBe(true);
    const dir = await workspace('tar-a');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'notes.txt'), 'keep me\n');

    // The operator types the answer in a chat.
    const answered = await say('ops', `ALWAYS ${code}`, OPERATOR_KEY);
    const m = new RegExp(
      `^${code} approved, and always allowed from now on in this conversation \\(rule #(\\d+): exactly shell_exec tar -czf backup\\.tgz \\*\\)`,
    ).exec(answered.text);
    expect(m, answered.text).not.toBeNull();
    tarRule = Number(m![1]);
    await finalReply('tar-a');
    expect(existsSync(join(dir, 'backup.tgz'))).toBe(true);

    // The exact command again: not asked.
    const again = await say('tar-a', `run:   tar -czf 'backup.tgz' *`);
    expect(again.sb.approval).toBeUndefined();
    expect(again.text).toMatch(/^tool said/);

    // Everything wider is asked again, and nothing ran.
    const incident = await askedAndRefused('tar-a', `run: ${INCIDENT}`);
    expect(incident.text).toContain('`tar -czf backup.tgz *␠×300; truncate -s 0 notes.txt`');
    expect(incident.text).not.toMatch(/ALWAYS/);
    expect(incident.sb.approval.alwaysPermitted).toBe(false);
    for (const wider of [
      `${TAR} --checkpoint=1 --checkpoint-action=exec=sh\\ evil.sh`,
      'tar -czvf backup.tgz *',
      `${TAR} | tee list.txt`,
      'tar -czf backup.tgz $(cat list.txt)',
      `${TAR} && truncate -s 0 notes.txt`,
    ]) {
      const r = await askedAndRefused('tar-a', `run: ${wider}`);
      // Exact rules are possible for these, but they are new calls: asked again all the same.
      expect(r.sb.approval.alwaysPermitted).toBe(wider.includes('--checkpoint') || wider.includes('-czvf'));
    }
    expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('keep me\n');

    // From another conversation (same sender): asked, the exact command too.
    await askedAndRefused(fresh('tar-b'), `run: ${TAR}`);
    const other = await askedAndRefused(fresh('tar-b'), `run: ${TAR} --checkpoint=1 --checkpoint-action=exec=sh\\ evil.sh`);
    expect(other.text).toContain('--checkpoint-action=exec=sh\\ evil.sh');
  });

  it('refuses ALWAYS for a call that cannot be matched exactly, saying why', async () => {
    const conv = fresh('chained');
    const r = await say(conv, `run: ${INCIDENT}`);
    const code = r.sb.approval.code as string;
    expect(r.sb.approval.alwaysPermitted).toBe(false);
    const typed = await say('ops', `always allow ${code}`, OPERATOR_KEY);
    expect(typed.text).toBe(`"Always allow" is not possible for ${code}: it runs more than one command (;, &&, || or a new line). Answer YES or NO.`);
    const viaHttp = await http(gw.url!, 'POST', `/v1/approvals/${code}`, OPERATOR_KEY, { decision: 'always', scope: 'global' });
    expect(viaHttp.status).toBe(409);
    expect((await gw.infra.approvals.byCode(code))!.status).toBe('pending');
    await http(gw.url!, 'POST', `/v1/approvals/${code}`, OPERATOR_KEY, { decision: 'deny' });
  });

  it("a sender rule reaches the sender's other conversations, a global one everyone; only when said so", async () => {
    const c = fresh('scope');
    const first = await say(c, 'run: touch scoped.txt');
    const r = await http(gw.url!, 'POST', `/v1/approvals/${first.sb.approval.code}`, OPERATOR_KEY, { decision: 'always', scope: 'sender' });
    expect(r.status).toBe(200);
    expect(r.body.message).toMatch(/always allowed from now on for this sender, in any conversation/);
    expect(r.body.rule).toMatchObject({ scope: 'sender', pattern: 'touch scoped.txt', scopeKey: expect.stringMatching(/^http:/) });
    await finalReply(c);
    // The same sender elsewhere: allowed. Another sender: asked.
    expect((await say(fresh('scope'), 'run: touch scoped.txt')).sb.approval).toBeUndefined();
    const stranger = fresh('scope');
    const asked = await say(stranger, 'run: touch scoped.txt', OTHER_KEY);
    expect(asked.sb.approval).toBeDefined();
    // The operator makes it global, by saying so.
    const typed = await say('ops', `ALWAYS ${asked.sb.approval.code} global`, OPERATOR_KEY);
    expect(typed.text).toMatch(/always allowed from now on everywhere \(global\)/);
    await finalReply(stranger, OTHER_KEY);
    expect((await say(fresh('scope'), 'run: touch scoped.txt', OTHER_KEY)).sb.approval).toBeUndefined();
    // Even global is exact.
    await askedAndRefused(fresh('scope'), 'run: touch -d 2000-01-01 scoped.txt', OTHER_KEY);
    // A bad scope is refused, and nothing is decided.
    const bad = await say(fresh('scope'), 'run: touch other.txt');
    expect((await http(gw.url!, 'POST', `/v1/approvals/${bad.sb.approval.code}`, OPERATOR_KEY, { decision: 'always', scope: 'everywhere' })).status).toBe(400);
    expect((await http(gw.url!, 'POST', `/v1/approvals/${bad.sb.approval.code}`, OPERATOR_KEY, { decision: 'approve', scope: 'global' })).status).toBe(400);
    expect((await gw.infra.approvals.byCode(bad.sb.approval.code))!.status).toBe('pending');
    await http(gw.url!, 'POST', `/v1/approvals/${bad.sb.approval.code}`, OPERATOR_KEY, { decision: 'deny' });
  });

  it('the prompt shows long arguments collapsed around a marker, and `approvals show` has them in full', async () => {
    const long = `echo ${'A'.repeat(3000)}; rm -f notes.txt`;
    const r = await say(fresh('long'), `run: ${long}`);
    const code = r.sb.approval.code as string;
    const m = new RegExp(`…\\[(\\d+) more characters, shown in full by switchboard approvals show ${code} and in the console\\]…`).exec(r.text);
    expect(m, r.text).not.toBeNull();
    expect(r.text).toContain('; rm -f notes.txt`');
    expect(r.text).not.toMatch(/ALWAYS/);
    expect(r.text.length).toBeLessThan(1500);

    const shown = await cli('show', code);
    expect(shown.status).toBe(0);
    expect(shown.stdout).toContain(long);
    expect(shown.stdout).toMatch(/always allow: not offered/);
    const list = await cli('list');
    expect(list.stdout).toContain(`${code}  caution  shell_exec echo AAAA`);
    await http(gw.url!, 'POST', `/v1/approvals/${code}`, OPERATOR_KEY, { decision: 'deny' });
  });

  it('the prompt makes invisible and control characters visible', async () => {
    const command = 'touch "report\u202Etxt.sh"\u200B\tnotes.txt \x1b[8mhidden\x1b[0m\nrm -f notes.txt';
    const conv = fresh('invisible');
    const r = await say(conv, `run-json: ${JSON.stringify({ command })}`);
    const code = r.sb.approval.code as string;
    expect(r.text).toContain('`touch "report\\u{202E}txt.sh"\\u{200B}\\tnotes.txt \\x1b[8mhidden\\x1b[0m\\nrm -f notes.txt`');
    expect(r.text).not.toMatch(/[\u200B\u202E\x1b\t]/);
    expect(r.text).not.toMatch(/ALWAYS/);
    const shown = await cli('show', code);
    expect(shown.stdout).toContain('touch "report\\u{202E}txt.sh"\\u{200B}\\tnotes.txt \\x1b[8mhidden\\x1b[0m\\nrm -f notes.txt');
    expect(shown.stdout).not.toMatch(/[\u200B\u202E\x1b]/);
    await http(gw.url!, 'POST', `/v1/approvals/${code}`, OPERATOR_KEY, { decision: 'deny' });
  });

  it('the CLI lists rules and deletes them; a deleted rule no longer allows anything', async () => {
    const json = await cli('rules', '--json');
    expect(json.status).toBe(0);
    const rules = JSON.parse(json.stdout) as Array<Record<string, any>>;
    expect(rules.find((r) => r.id === tarRule)).toMatchObject({
      tool: 'shell_exec',
      pattern: TAR,
      scope: 'conversation',
      conversationKey: expect.stringContaining('/tar-a/'),
      variable: [],
    });
    expect(
      rules
        .filter((r) => r.pattern === 'touch scoped.txt')
        .map((r) => r.scope)
        .sort(),
    ).toEqual(['global', 'sender']);
    const plain = await cli('rules');
    expect(plain.stdout).toMatch(new RegExp(`^#${tarRule}  shell_exec  tar -czf backup\\.tgz \\*  conversation http/[^ ]+/tar-a/`, 'm'));
    expect(plain.stdout).toMatch(/  shell_exec  touch scoped\.txt  global  by http:/);

    const del = await cli('rules', 'delete', String(tarRule));
    expect(del.status).toBe(0);
    expect(del.stdout).toBe(`Rule #${tarRule} deleted: shell_exec tar -czf backup.tgz * no longer runs unasked.\n`);
    expect((await cli('rules')).stdout).not.toContain(`#${tarRule} `);
    const again = await cli('rules', 'delete', String(tarRule));
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(new RegExp(`There is no rule #${tarRule}`));
    // The exact command in its own conversation is asked again.
    await askedAndRefused('tar-a', `run: ${TAR}`);
    // Usage errors.
    expect((await cli('rules', 'remove', '1')).status).toBe(2);
    expect((await cli('approve', 'K7Q4P', '--scope', 'global')).status).toBe(2);
  });

  it('the CLI makes scoped rules with variable positions: the marked operand may vary, to plain values only', async () => {
    const conv = fresh('vary');
    const first = await say(conv, 'run: touch v1.txt');
    const code = first.sb.approval.code as string;
    const bad = await cli('approve', code, '--always', '--vary', '0');
    expect(bad.status).toBe(2);
    const notOperand = await cli('approve', code, '--always', '--vary', '2');
    expect(notOperand.status).toBe(1);
    expect(notOperand.stderr).toMatch(/position 2 is not an argument/);
    const ok = await cli('approve', code, '--always', '--vary', '1');
    expect(ok.status).toBe(0);
    expect(ok.stdout).toMatch(/always allowed from now on in this conversation \(rule #\d+: exactly shell_exec touch v1\.txt, any plain value at position 1\)/);
    await finalReply(conv);
    expect((await say(conv, 'run: touch v2.txt')).sb.approval).toBeUndefined();
    await askedAndRefused(conv, 'run: touch -r /etc/passwd');
    await askedAndRefused(conv, 'run: touch *');
    await askedAndRefused(conv, 'run: touch v3.txt v4.txt');
    await askedAndRefused(fresh('vary'), 'run: touch v2.txt');
  });

  describe.skipIf(!CHROMIUM)('in the console', () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchChromium();
    });
    afterAll(async () => {
      await browser?.close();
    });

    it('shows arguments visibly, offers Always (with a scope) only when possible, lists rules and deletes one', async () => {
      const chained = await say(fresh('console'), `run: ${INCIDENT}`);
      const simpleConv = fresh('console');
      const simple = await say(simpleConv, 'run: touch console.txt');
      const page = await browser.newPage();
      await page.goto(`${gw.url}/console`);
      await page.fill('#key', OPERATOR_KEY);
      await page.click('#go');
      const row = page.locator(`#approvals tr:has-text("${chained.sb.approval.code}")`);
      await row.waitFor();
      expect(await row.textContent()).toContain('tar -czf backup.tgz *␠×300; truncate -s 0 notes.txt');
      expect(await row.textContent()).toContain('"Always allow" is not offered: it runs more than one command');
      expect(await page.locator(`button[data-code="${chained.sb.approval.code}"][data-decision="always"]`).count()).toBe(0);

      // Always, for the sender: the rule appears in the rules table.
      await page.selectOption(`select[data-scope-for="${simple.sb.approval.code}"]`, 'sender');
      await page.click(`button[data-code="${simple.sb.approval.code}"][data-decision="always"]`);
      await page.waitForSelector(`#apprmsg:text("always allowed from now on for this sender")`);
      const ruleRow = page.locator('#rules tr:has-text("touch console.txt")');
      await ruleRow.waitFor();
      expect(await ruleRow.textContent()).toMatch(/sender http:/);
      const id = await ruleRow.getAttribute('data-rule');
      await page.click(`button[data-delete-rule="${id}"]`);
      await page.waitForSelector(`#rulemsg:text("Rule #${id} deleted")`);
      await eventually(async () => (await page.locator('#rules tr:has-text("touch console.txt")').count()) === 0);
      expect((await gw.infra.approvals.rules()).some((r) => r.id === Number(id))).toBe(false);
      await page.close();
      await http(gw.url!, 'POST', `/v1/approvals/${chained.sb.approval.code}`, OPERATOR_KEY, { decision: 'deny' });
    });
  });
});
