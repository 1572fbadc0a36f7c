import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { type ClientRequest, createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ignoreError, SwitchboardError } from '../../kernel/errors.js';
import { checkUrl, type SsrfOptions } from '../../moat/ssrf.js';

export interface EgressLog {
  warn(obj: object, msg: string): void;
}

/**
 * The sandbox's only way out with `tools.sandbox.network: egress`: an HTTP
 * proxy (CONNECT for TLS, absolute-form requests for plain HTTP) on a Unix
 * socket that is bound into each sandbox. Every connection's host passes the
 * SSRF guard, and the proxy connects to the address the guard checked, so DNS
 * rebinding cannot redirect it to loopback, the metadata service or the LAN.
 */
/** Connections open through the proxy at once (sandbox side), and how long one may sit idle. */
export const MAX_EGRESS_CONNECTIONS = 256;
const IDLE_MS = 120_000;
const CONNECT_TIMEOUT_MS = 10_000;

export class EgressProxy {
  readonly socketPath: string;
  private readonly dir: string;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly ssrf: SsrfOptions,
    private readonly log?: EgressLog,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'switchboard-egress-'));
    // The sandbox runs as another user: it must be able to reach the socket.
    chmodSync(this.dir, 0o711);
    this.socketPath = join(this.dir, 'proxy.sock');
    this.server = createServer((req, res) => {
      // When the sandbox side goes away (the call ended), so does the upstream request.
      let gone = false;
      let upstreamReq: ClientRequest | undefined;
      res.on('close', () => {
        gone = true;
        upstreamReq?.destroy();
      });
      this.forwardHttp(req, (r) => (upstreamReq = r)).then(
        (upstream) => {
          if (gone) return void upstream.destroy();
          res.writeHead(upstream.statusCode ?? 502, upstream.headers);
          upstream.pipe(res);
        },
        (err: Error) => {
          if (gone) return;
          res.writeHead(err instanceof Refused ? 403 : 502, { 'content-type': 'text/plain' });
          res.end(`switchboard egress proxy: ${err.message}\n`);
        },
      );
    });
    this.server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => this.tunnel(req, client, head));
    this.server.maxConnections = MAX_EGRESS_CONNECTIONS;
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.setTimeout(IDLE_MS, () => s.destroy());
      s.on('close', () => this.sockets.delete(s));
    });
  }

  static async start(ssrf: SsrfOptions = {}, log?: EgressLog): Promise<EgressProxy> {
    const p = new EgressProxy(ssrf, log);
    await new Promise<void>((resolve, reject) => {
      p.server.once('error', reject);
      p.server.listen(p.socketPath, () => resolve());
    });
    chmodSync(p.socketPath, 0o666);
    return p;
  }

  private async check(url: string): Promise<{ address: string; port: number }> {
    const v = await checkUrl(url, this.ssrf);
    if (!v.allowed || !v.address) {
      this.log?.warn({ url, reason: v.reason }, 'sandbox egress refused');
      throw new Refused(`refused ${url}: ${v.reason}`);
    }
    const u = new URL(v.url ?? url);
    return { address: v.address, port: Number(u.port || (u.protocol === 'https:' ? 443 : 80)) };
  }

  private tunnel(req: IncomingMessage, client: Socket, head: Buffer): void {
    // The sandboxed client hanging up mid-tunnel ends the tunnel; nothing to report.
    client.on('error', ignoreError('the client hung up'));
    // Registered before the (asynchronous) check: a client gone by then gets no upstream at all.
    let upstream: Socket | undefined;
    client.on('close', () => upstream?.destroy());
    const target = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(req.url ?? '');
    if (!target) {
      client.end('HTTP/1.1 400 Bad Request\r\n\r\nCONNECT needs host:port\n');
      return;
    }
    const host = target[1]!.includes(':') ? `[${target[1]}]` : target[1]!;
    this.check(`https://${host}:${target[2]}/`).then(
      ({ address, port }) => {
        if (client.destroyed) return;
        const up = (upstream = connect({ host: address, port, timeout: CONNECT_TIMEOUT_MS }));
        this.sockets.add(up);
        up.on('close', () => this.sockets.delete(up));
        up.on('error', () => client.destroy());
        up.once('timeout', () => up.destroy());
        up.once('connect', () => {
          up.setTimeout(IDLE_MS);
          client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
          if (head.length) up.write(head);
          up.pipe(client);
          client.pipe(up);
        });
      },
      (err: Error) =>
        client.end(
          `HTTP/1.1 ${err instanceof Refused ? '403 Forbidden' : '502 Bad Gateway'}\r\ncontent-type: text/plain\r\n\r\nswitchboard egress proxy: ${err.message}\n`,
        ),
    );
  }

  private async forwardHttp(req: IncomingMessage, started: (r: ClientRequest) => void): Promise<IncomingMessage> {
    const url = req.url ?? '';
    if (!/^http:\/\//i.test(url)) throw new Refused('only absolute http:// URLs (and CONNECT for https) go through this proxy');
    const { address, port } = await this.check(url);
    const u = new URL(url);
    const headers: Record<string, string | string[] | undefined> = { ...req.headers, host: u.host };
    delete headers['proxy-connection'];
    delete headers['proxy-authorization'];
    return new Promise((resolve, reject) => {
      const out = httpRequest({ host: address, port, method: req.method, path: `${u.pathname}${u.search}`, headers, timeout: IDLE_MS }, resolve);
      started(out);
      out.on('error', reject);
      out.once('timeout', () => out.destroy(new Error('the upstream did not answer in time')));
      req.pipe(out);
    });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The guard refused the request's destination (answered 403). */
class Refused extends SwitchboardError {
  readonly code = 'egress_refused';
}
