/** Records the outbound event webhooks (src/webhooks/events.ts) a gateway POSTs: {type, data} per event. */
import { createServer, type Server } from 'node:http';

export async function eventReceiver(): Promise<{ server: Server; url: string; got: Array<{ type: string; data: any }> }> {
  const got: Array<{ type: string; data: any }> = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      got.push(JSON.parse(raw));
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/events`, got };
}
