import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './redis.js';

/**
 * A private PostgreSQL server for a test that restarts it (the shared one must
 * not be). initdb refuses root, so as root the server runs as the `postgres` user.
 */
export class PrivatePostgres {
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly bin: string,
  ) {}

  static async start(): Promise<PrivatePostgres> {
    const versions = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a)) : [];
    if (!versions.length) throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql (Debian: apt-get install postgresql)');
    const bin = `/usr/lib/postgresql/${versions[0]}/bin`;
    const dir = mkdtempSync(join(tmpdir(), 'sb-pg-'));
    chmodSync(dir, 0o777);
    const p = new PrivatePostgres(join(dir, 'data'), await freePort(), bin);
    p.run('initdb', ['-D', p.dir, '-A', 'trust', '-U', 'postgres', '--no-sync']);
    await p.startServer();
    return p;
  }

  private run(tool: string, args: string[]): void {
    const cmd = join(this.bin, tool);
    const asRoot = process.getuid?.() === 0;
    const r = asRoot ? spawnSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { encoding: 'utf8' }) : spawnSync(cmd, args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${tool} failed: ${r.stderr || r.stdout}`);
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  private async startServer(): Promise<void> {
    this.run('pg_ctl', [
      '-D',
      this.dir,
      '-o',
      `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      '-l',
      join(this.dir, 'log'),
      '-w',
      'start',
    ]);
    for (let i = 0; i < 100; i++) {
      const c = new pg.Client({ connectionString: this.url });
      try {
        await c.connect();
        await c.end();
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    throw new Error('private Postgres did not come up');
  }

  /** Stops the server (every connection is cut) and starts it again, keeping the data. */
  async restart(downMs = 500): Promise<void> {
    this.run('pg_ctl', ['-D', this.dir, '-m', 'immediate', '-w', 'stop']);
    await new Promise((r) => setTimeout(r, downMs));
    await this.startServer();
  }

  async stop(): Promise<void> {
    try {
      this.run('pg_ctl', ['-D', this.dir, '-m', 'immediate', '-w', 'stop']);
    } catch {
      /* already down */
    }
    try {
      execFileSync('rm', ['-rf', this.dir]);
    } catch {
      /* left in tmp */
    }
  }
}
