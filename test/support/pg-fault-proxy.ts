import { connect, createServer, type Server, type Socket } from 'node:net';

/** The server's acknowledgement of a COMMIT: CommandComplete ('C', length 11, tag "COMMIT\0"). */
const COMMIT_ACK = Buffer.from([0x43, 0, 0, 0, 0x0b, ...Buffer.from('COMMIT', 'ascii'), 0]);

/**
 * A TCP proxy in front of a real Postgres, for faults no statement can cause: armed with
 * dropNextCommitAck(), the next connection whose server acknowledges a COMMIT is cut
 * instead of passing the acknowledgement on. The transaction is committed on the server
 * and its client is told the connection died: exactly a connection lost after COMMIT.
 */
export class PgFaultProxy {
  private readonly sockets = new Set<Socket>();
  private armed = false;
  /** How many acknowledged commits were cut. */
  dropped = 0;

  private constructor(
    private readonly server: Server,
    private readonly target: URL,
  ) {}

  static async start(targetUrl: string): Promise<PgFaultProxy> {
    const target = new URL(targetUrl);
    let proxy: PgFaultProxy | undefined;
    const server = createServer((client) => proxy!.pipe(client));
    proxy = new PgFaultProxy(server, target);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  /** The target's URL, through the proxy. */
  get url(): string {
    const u = new URL(this.target);
    const address = this.server.address();
    u.hostname = '127.0.0.1';
    u.port = String(typeof address === 'object' && address ? address.port : 0);
    return u.toString();
  }

  dropNextCommitAck(): void {
    this.armed = true;
  }

  private pipe(client: Socket): void {
    const upstream = connect(Number(this.target.port || 5432), this.target.hostname);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      // A cut connection reports an error on the other side; that is the point.
      s.on('error', () => s.destroy());
    }
    client.on('data', (d: Buffer) => upstream.write(d));
    upstream.on('data', (d: Buffer) => {
      if (this.armed && d.includes(COMMIT_ACK)) {
        this.armed = false;
        this.dropped++;
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(d);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
