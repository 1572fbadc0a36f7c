/**
 * A signed webhook hook whose callback server records what the gateway POSTs back: a
 * conversation with a real channel delivery, for tests of proactive turns (schedules).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sign } from '../../kernel/hmac-signature.js';

export class WebhookHook {
  readonly received: Array<{ text: string }> = [];
  /** What the callback answers: set 500 to make every delivery to it fail (it still records the attempt in `failed`). */
  status = 200;
  readonly failed: Array<{ text: string }> = [];
  private server?: Server;

  constructor(
    readonly name: string,
    readonly secret: string,
    readonly secretEnv: string,
  ) {}

  async start(): Promise<this> {
    process.env[this.secretEnv] = this.secret;
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        (this.status < 300 ? this.received : this.failed).push(JSON.parse(body));
        res.writeHead(this.status).end('{}');
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    return this;
  }

  /** The hook's entry for channels.webhook.hooks. */
  config(): Record<string, unknown> {
    return {
      name: this.name,
      secretEnv: this.secretEnv,
      callbackUrl: `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/cb`,
      allowCallbackCidrs: ['127.0.0.0/8'],
    };
  }

  /** POSTs a signed event to the gateway at `baseUrl`. */
  send(baseUrl: string, body: { text: string; conversation: string; sender: string }): Promise<Response> {
    const raw = JSON.stringify(body);
    const ts = Math.floor(Date.now() / 1000);
    return fetch(`${baseUrl}/v1/webhooks/${this.name}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-switchboard-timestamp': String(ts), 'x-switchboard-signature': sign(this.secret, ts, raw) },
      body: raw,
    });
  }

  async close(): Promise<void> {
    await new Promise((r) => this.server?.close(r));
    delete process.env[this.secretEnv];
  }
}
