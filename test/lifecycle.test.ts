/**
 * The one lifecycle (app/lifecycle.ts): parts start in order and close in reverse, close() runs
 * once however often it is called, a failing close neither stops the others nor goes unlogged,
 * and a failed start closes what had started, in reverse, and rethrows the start's error.
 */
import { describe, expect, it } from 'vitest';
import { closingOnFailure, Lifecycle, once, service } from '../app/lifecycle.js';

function recorder() {
  const events: string[] = [];
  const logged: Array<{ level: string; obj: Record<string, unknown>; msg: string }> = [];
  const log = {
    warn: (obj: object, msg: string) => void logged.push({ level: 'warn', obj: obj as Record<string, unknown>, msg }),
    debug: (obj: object, msg: string) => void logged.push({ level: 'debug', obj: obj as Record<string, unknown>, msg }),
  };
  const part = (name: string, opts: { failStart?: boolean; failClose?: boolean } = {}) =>
    service(
      async () => {
        events.push(`start ${name}`);
        if (opts.failStart) throw new Error(`${name} cannot start`);
      },
      async () => {
        events.push(`close ${name}`);
        if (opts.failClose) throw new Error(`${name} cannot close`);
      },
    );
  return { events, logged, log, part };
}

describe('Lifecycle', () => {
  it('starts parts in order and closes them in reverse', async () => {
    const r = recorder();
    const life = new Lifecycle(r.log);
    await life.start('a', r.part('a'));
    await life.start('b', r.part('b'));
    await life.start('c', r.part('c'));
    expect(life.names()).toEqual(['a', 'b', 'c']);
    await life.close();
    expect(r.events).toEqual(['start a', 'start b', 'start c', 'close c', 'close b', 'close a']);
  });

  it('closes once: every call gets the same promise, no part is closed twice', async () => {
    const r = recorder();
    const life = new Lifecycle(r.log);
    await life.start('a', r.part('a'));
    const first = life.close();
    const second = life.close();
    expect(second).toBe(first);
    await Promise.all([first, second, life.close()]);
    expect(r.events.filter((e) => e === 'close a')).toHaveLength(1);
    await expect(life.start('late', r.part('late'))).rejects.toThrow('cannot start late: the process is closing');
  });

  it('runs every close when one fails, and logs the failure with the part name', async () => {
    const r = recorder();
    const life = new Lifecycle(r.log);
    await life.start('db', r.part('db'));
    await life.start('queue', r.part('queue', { failClose: true }));
    await life.start('http', r.part('http'));
    await expect(life.close()).resolves.toBeUndefined();
    expect(r.events.slice(3)).toEqual(['close http', 'close queue', 'close db']);
    const warn = r.logged.filter((l) => l.level === 'warn');
    expect(warn).toHaveLength(1);
    expect(warn[0]!.obj.part).toBe('queue');
    expect((warn[0]!.obj.err as Error).message).toBe('queue cannot close');
    expect(warn[0]!.msg).toContain('closing queue failed');
  });

  it('a failed start closes what had started, in reverse, and rethrows the start error', async () => {
    const r = recorder();
    const life = new Lifecycle(r.log);
    const boot = life.boot(async () => {
      await life.start('lock', r.part('lock'));
      await life.start('http', r.part('http', { failClose: true }));
      await life.start('sandbox', r.part('sandbox', { failStart: true }));
      await life.start('never', r.part('never'));
    });
    await expect(boot).rejects.toThrow('sandbox cannot start');
    // The part that failed to start is not closed (it left nothing running); the others are, in reverse,
    // and a close failing meanwhile does not replace the start error.
    expect(r.events).toEqual(['start lock', 'start http', 'start sandbox', 'close http', 'close lock']);
    expect(r.logged.some((l) => l.level === 'warn' && l.obj.part === 'http')).toBe(true);
  });

  it('a failure between parts (not a start) also closes what had started', async () => {
    const r = recorder();
    const life = new Lifecycle(r.log);
    await expect(
      life.boot(async () => {
        await life.start('infra', r.part('infra'));
        throw new Error('invalid configuration at "approvals.operatorChannel.channel"');
      }),
    ).rejects.toThrow('operatorChannel');
    expect(r.events).toEqual(['start infra', 'close infra']);
  });

  it('reports the health of the parts that have one; a throwing health reads as not ok', async () => {
    const r = recorder();
    const life = new Lifecycle(r.log);
    await life.start('quiet', r.part('quiet'));
    await life.start(
      'slack',
      service(undefined, undefined, () => ({ ok: false, message: 'reconnecting' })),
    );
    await life.start(
      'broken',
      service(undefined, undefined, () => {
        throw new Error('no state');
      }),
    );
    expect(life.health()).toEqual({ slack: { ok: false, message: 'reconnecting' }, broken: { ok: false, message: 'no state' } });
  });

  it('once(): a close run early is not run again', async () => {
    let n = 0;
    const close = once(() => void n++);
    await close();
    await close();
    expect(n).toBe(1);
  });

  it('closingOnFailure(): a part whose start fails half-way is closed, and the start error is what is thrown', async () => {
    const r = recorder();
    const life = new Lifecycle(r.log);
    const start = closingOnFailure(
      'listener discord',
      r.log,
      () => {
        r.events.push('client opened');
        throw new Error('discord login failed');
      },
      () => {
        r.events.push('client closed');
        throw new Error('already gone');
      },
    );
    await expect(life.start('listener discord', service(start))).rejects.toThrow('discord login failed');
    expect(r.events).toEqual(['client opened', 'client closed']);
    expect(r.logged.find((l) => l.level === 'warn')?.obj.part).toBe('listener discord');
    expect(life.names()).toEqual([]);
  });
});
