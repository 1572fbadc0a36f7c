// A fake MCP server over stdio for test/mcp-client.test.ts. Run with `node`.
// stdout carries the protocol only; diagnostics go to stderr.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'fake-stdio', version: '1.0.0' });

server.registerTool('env_keys', { description: 'Names of the environment variables this process sees', annotations: { readOnlyHint: true } }, async () => ({
  content: [{ type: 'text', text: JSON.stringify(Object.keys(process.env).sort()) }],
}));

server.registerTool('echo', { description: 'Echoes its text', inputSchema: { text: z.string() }, annotations: { readOnlyHint: true } }, async ({ text }) => ({
  content: [{ type: 'text', text: `echo:${text}` }],
}));

server.registerTool('pid', { description: 'This process id', annotations: { readOnlyHint: true } }, async () => ({
  content: [{ type: 'text', text: String(process.pid) }],
}));

server.registerTool('crash', { description: 'Exits the server process', annotations: { readOnlyHint: true } }, async () => {
  setTimeout(() => process.exit(3), 10);
  return { content: [{ type: 'text', text: 'bye' }] };
});

await server.connect(new StdioServerTransport());
process.stderr.write('fake stdio MCP server ready\n');
