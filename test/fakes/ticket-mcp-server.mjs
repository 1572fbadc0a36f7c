// A fake MCP server over stdio for test/durable-turns.test.ts: `create_ticket` has an
// effect (no read-only annotation) and counts its runs, one line per run appended to
// $TICKET_DIR/<title>. Run with `node`. stdout carries the protocol only.
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const dir = process.env.TICKET_DIR;
if (!dir) throw new Error('TICKET_DIR is not set');
const server = new McpServer({ name: 'fake-desk', version: '1.0.0' });

server.registerTool('create_ticket', { description: 'Creates a ticket', inputSchema: { title: z.string() } }, async ({ title }) => {
  const file = join(dir, title.replace(/[^\w-]/g, '_'));
  appendFileSync(file, 'run\n');
  const runs = readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
  return { content: [{ type: 'text', text: `ticket ${title} created (run ${runs})` }] };
});

await server.connect(new StdioServerTransport());
process.stderr.write('fake ticket MCP server ready\n');
