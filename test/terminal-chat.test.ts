/** `switchboard chat` in a pseudo-terminal (util-linux `script`), against a running gateway, and skill playbooks read on demand. */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { packageRoot } from '../kernel/paths.js';
import { FakeLlm, type FakeRequest, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { API_KEY, eventually, openaiClient, startGateway, testConfig } from './support/gateway.js';

const OPERATOR_KEY = 'op-key-chat-0001';

describe('terminal chat', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req: FakeRequest) => {
      const last = (req.body.messages as Array<{ role: string; content: unknown }>).at(-1)!;
      if (last.role === 'tool') return reply(`the command said: ${String(last.content).includes('exit code 0') ? 'ok' : 'failed'}`);
      const t = lastUserText(req.body);
      if (t.startsWith('run ')) return toolCall('shell_exec', { command: t.slice(4) });
      if (t.includes('incident')) return toolCall('skill_read', { name: 'incident-response' });
      return reply(`hello from the agent, you said ${t}`, 5);
    });
    gw = await startGateway(testConfig(fake, {}, { http: { operatorKeys: [OPERATOR_KEY] } }));
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
  });

  it('streams answers, shows tool activity, and answers an approval inline', async () => {
    const cmd = `${process.execPath} ${join(packageRoot, 'bin', 'switchboard.js')} chat --conversation tty-1`;
    const child = spawn('script', ['-qfec', cmd, '/dev/null'], {
      env: { PATH: process.env.PATH ?? '', TERM: 'dumb', SWITCHBOARD_URL: gw.url!, SWITCHBOARD_API_KEY: API_KEY, SWITCHBOARD_OPERATOR_KEY: OPERATOR_KEY },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let screen = '';
    child.stdout.on('data', (d) => (screen += d.toString()));
    const waitFor = (re: RegExp) =>
      eventually(async () => re.test(screen), 20_000, 50).catch(() => {
        throw new Error(`screen never matched ${re}:\n${screen}`);
      });
    await waitFor(/you> /);
    child.stdin.write('good morning\n');
    await waitFor(/agent> hello from the agent, you said good morning/);
    child.stdin.write('run ls\n'); // a safe command: runs at once, and the chat shows it
    await waitFor(/\[tool shell_exec started\][\s\S]*\[tool shell_exec done\][\s\S]*the command said: ok/);
    child.stdin.write('run echo hi >> notes.txt\n');
    await waitFor(/approval [A-Z0-9]{5} \(caution\) for shell_exec: \[y\]es/);
    child.stdin.write('y\n');
    await waitFor(/approved by/);
    await waitFor(/agent> the command said: ok/);
    child.stdin.write('/quit\n');
    await new Promise((r) => child.once('exit', r));
    expect(screen.match(/the command said: ok/g)).toHaveLength(2);
  });

  /** The chat in a pseudo-terminal, with these arguments and environment; what it shows, and how to wait for it. */
  const chat = (args: string, env: Record<string, string>) => {
    const cmd = `${process.execPath} ${join(packageRoot, 'bin', 'switchboard.js')} chat ${args}`;
    const child = spawn('script', ['-qfec', cmd, '/dev/null'], {
      env: { PATH: process.env.PATH ?? '', TERM: 'dumb', SWITCHBOARD_URL: gw.url!, SWITCHBOARD_API_KEY: API_KEY, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const t = { screen: '', child };
    child.stdout.on('data', (d) => (t.screen += d.toString()));
    const waitFor = (re: RegExp) =>
      eventually(async () => re.exec(t.screen), 20_000, 50).catch(() => {
        throw new Error(`screen never matched ${re}:\n${t.screen}`);
      });
    const quit = async () => {
      child.stdin.write('/quit\n');
      await new Promise((r) => child.once('exit', r));
    };
    return { t, waitFor, quit, type: (line: string) => child.stdin.write(`${line}\n`) };
  };

  it('answers with the operator key (--operator-key), never offers [a]lways for the dangerous tier, and sends a typed YES to the approvals API', async () => {
    const c = chat(`--conversation tty-2 --operator-key ${OPERATOR_KEY}`, {});
    await c.waitFor(/you> /);
    c.type('run rm -rf scratch');
    const prompt = await c.waitFor(/approval ([A-Z0-9]{5}) \(dangerous\) for shell_exec: ([^\n]*)\?/);
    const code = prompt[1]!;
    expect(prompt[2]).toBe('[y]es / [n]o / [s]kip');
    c.type('s'); // left waiting: the chat says so and waits for the answer
    await c.waitFor(new RegExp(`approval ${code} left waiting[\\s\\S]*waiting for the answer`));
    const before = fake.requests.length;
    c.type(`yes ${code}`); // typed: through the approvals API with the operator key, not into the conversation
    await c.waitFor(new RegExp(`${code} approved by op:`));
    await c.waitFor(/agent> the command said: ok/);
    await c.quit();
    const a = (await gw.infra.approvals.byCode(code))!;
    expect(a.status).toBe('executed');
    expect(a.decidedBy).toMatch(/^http:op:/); // the operator key's principal, not the user's
    expect(fake.requests.slice(before).map((r) => lastUserText(r.body))).not.toContain(`yes ${code}`);
  });

  it('without an operator key: says an operator must approve, keeps waiting, and shows the resumed answer', async () => {
    const c = chat('--conversation tty-3', {});
    await c.waitFor(/you> /);
    c.type('run echo later >> later.txt');
    const told = await c.waitFor(/An operator must approve this \(code ([A-Z0-9]{5})\)/);
    const code = told[1]!;
    await c.waitFor(new RegExp(`approval ${code} is waiting for an operator[\\s\\S]*waiting for the answer`));
    expect(c.t.screen).not.toMatch(/\[y\]es/);
    // Approved elsewhere (the console, another operator): the chat shows the resumed answer.
    const r = await fetch(`${gw.url}/v1/approvals/${code}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve' }),
    });
    expect(r.status).toBe(200);
    await c.waitFor(/agent> the command said: ok/);
    await c.quit();
  });

  it('lists playbook summaries in the prompt and gives the model a playbook through the tool', async () => {
    const before = fake.requests.length;
    const r = await openaiClient(gw.url!).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: 'we have an incident, what now?' }],
    });
    const first = fake.requests[before]!;
    const system = JSON.stringify(first.body.messages[0]);
    expect(system).toContain('incident-response: How to run a production incident');
    expect(system).not.toContain('blameless postmortem'); // only the summary is in the prompt
    const second = JSON.stringify(fake.requests[before + 1]!.body.messages);
    expect(second).toContain('blameless postmortem'); // the playbook reached the model through skill_read
    expect(r.choices[0]!.message.content).toBeDefined();
  });
});
