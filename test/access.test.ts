/** Access control per channel: allowlist (default), pairing approved by an operator, open, disabled. */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { packageRoot } from '../kernel/paths.js';
import { AccessControl } from '../src/access.js';
import { Ingress } from '../src/ingress.js';
import { FakeLlm, reply } from './fakes/fake-llm.js';
import { startGateway, testConfig } from './support/gateway.js';

const OPERATOR_KEY = 'op-key-access-001';

describe('access control', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  let ingress: Ingress;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond(() => reply('hi'));
    gw = await startGateway(
      testConfig(
        fake,
        {},
        {
          http: { operatorKeys: [OPERATOR_KEY] },
          access: { pair: { policy: 'pairing' }, listed: { policy: 'allowlist', allow: ['friend'] }, anyone: { policy: 'open' }, off: { policy: 'disabled' } },
          pairing: { maxPendingPerChannel: 2 },
        },
      ),
    );
    ingress = new Ingress(gw.infra.store, gw.infra.queue, gw.log, { access: new AccessControl(gw.infra.access, gw.config) });
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
  });

  let n = 0;
  const say = (channel: string, sender: string) =>
    ingress.receive({
      channel,
      externalId: `a${++n}`,
      conversationKey: `${channel}/-/${sender}/-`,
      sender: { id: sender },
      text: 'hello',
      attachments: [],
      receivedAt: new Date(),
    });
  const cli = (...args: string[]) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const p = spawn(process.execPath, [join(packageRoot, 'bin', 'switchboard.js'), 'access', ...args], {
        env: { PATH: process.env.PATH ?? '', SWITCHBOARD_URL: gw.url!, SWITCHBOARD_OPERATOR_KEY: OPERATOR_KEY },
      });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (d) => (stdout += d));
      p.stderr.on('data', (d) => (stderr += d));
      p.on('close', (status) => resolve({ status, stdout, stderr }));
    });

  it('allowlist (the default): only listed senders', async () => {
    expect((await say('listed', 'friend')).kind).toBe('accepted');
    expect(await say('listed', 'stranger')).toEqual({ kind: 'refused', code: 'access', reply: expect.stringMatching(/allowlist/) });
    expect(await say('unconfigured', 'someone')).toMatchObject({ kind: 'refused' });
  });

  it('open and disabled', async () => {
    expect((await say('anyone', 'whoever')).kind).toBe('accepted');
    expect(await say('off', 'whoever')).toEqual({ kind: 'refused', code: 'access' });
  });

  it('pairing: a code that an operator approves from the CLI; pending codes are capped', async () => {
    const first = await say('pair', 'newcomer');
    expect(first).toMatchObject({ kind: 'refused', reply: expect.stringMatching(/pairing code [A-Z0-9]{5}/) });
    const code = /code ([A-Z0-9]{5})/.exec((first as { reply: string }).reply)![1]!;
    expect(await say('pair', 'newcomer')).toEqual(first); // the same code while it is valid
    await say('pair', 'second');
    expect(await say('pair', 'third')).toMatchObject({ kind: 'refused', reply: expect.stringMatching(/too many pairing requests/) });
    const list = await cli('list', '--status', 'pending', '--json');
    expect(JSON.parse(list.stdout)).toEqual(expect.arrayContaining([expect.objectContaining({ channel: 'pair', sender: 'newcomer', code })]));
    const ok = await cli('approve', code.toLowerCase());
    expect(ok.status).toBe(0);
    expect(ok.stdout).toBe('pair newcomer: allowed\n');
    expect((await say('pair', 'newcomer')).kind).toBe('accepted');
    expect((await cli('approve', code)).status).toBe(1); // used
    expect((await cli('deny', 'pair', 'newcomer')).status).toBe(0);
    expect(await say('pair', 'newcomer')).toEqual({ kind: 'refused', code: 'access' });
  });
});
