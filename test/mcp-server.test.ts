/** Switchboard as an MCP server, driven by the official SDK client over Streamable HTTP. */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { openaiClient, startGateway, testConfig } from './support/gateway.js';

const OPERATOR_KEY = 'op-key-mcp-0001';

async function connect(url: string, key: string) {
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return client;
}
const textOf = (r: unknown) => (r as { content: Array<{ text: string }> }).content[0]?.text ?? '';

describe('Switchboard MCP server', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  beforeAll(async () => {
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => {
      const msgs = req.body.messages as Array<{ role: string }>;
      if (msgs[msgs.length - 1]!.role === 'tool') return reply('ran it');
      const t = lastUserText(req.body);
      return t.startsWith('run: ') ? toolCall('shell_exec', { command: t.slice(5) }) : reply(`echo: ${t}`);
    });
    gw = await startGateway(testConfig(fake, {}, { http: { operatorKeys: [OPERATOR_KEY] } }));
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
  });

  it('refuses a client without an operator key', async () => {
    await expect(connect(gw.url!, 'sk-test-key-0001')).rejects.toThrow(/needs an operator key/);
    await expect(connect(gw.url!, 'wrong-key-123456')).rejects.toThrow(/needs an operator key/);
  });

  it('lists conversations, reads a transcript, and sends a message into a conversation', async () => {
    await openaiClient(gw.url!, undefined, { 'X-Switchboard-Conversation': 'mcp-demo' }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: 'first words' }],
    });
    const client = await connect(gw.url!, OPERATOR_KEY);
    const names = (await client.listTools()).tools.map((t) => t.name).sort();
    expect(names).toEqual(['answer_approval', 'list_approvals', 'list_conversations', 'read_transcript', 'send_message']);
    const convs = JSON.parse(textOf(await client.callTool({ name: 'list_conversations', arguments: {} }))) as Array<{ id: string; key: string }>;
    const demo = convs.find((c) => c.key.includes('/mcp-demo/'))!;
    expect(demo).toBeDefined();
    const transcript = JSON.parse(textOf(await client.callTool({ name: 'read_transcript', arguments: { conversation: demo.id } }))) as Array<{ role: string }>;
    expect(transcript.map((m) => m.role)).toEqual(['user', 'assistant']);
    const sent = await client.callTool({ name: 'send_message', arguments: { conversation: demo.id, text: 'from another agent' } });
    expect(textOf(sent)).toBe('echo: from another agent');
    const bad = await client.callTool({ name: 'read_transcript', arguments: { conversation: 'c_nope' } });
    expect(bad.isError).toBe(true);
    await client.close();
  });

  it('lists and answers approvals', async () => {
    const r = await openaiClient(gw.url!, undefined, { 'X-Switchboard-Conversation': 'mcp-appr' }).chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: 'run: echo mcp > f.txt' }],
    });
    const code = (r as any).switchboard.approval.code as string;
    const client = await connect(gw.url!, OPERATOR_KEY);
    const pending = JSON.parse(textOf(await client.callTool({ name: 'list_approvals', arguments: {} }))) as Array<{ code: string; tool: string }>;
    expect(pending.find((p) => p.code === code)).toMatchObject({ tool: 'shell_exec' });
    const answered = await client.callTool({ name: 'answer_approval', arguments: { code, decision: 'approve' } });
    expect(textOf(answered)).toMatch(/approved/);
    const replay = await client.callTool({ name: 'answer_approval', arguments: { code, decision: 'deny' } });
    expect(replay.isError).toBe(true);
    await client.close();
  });
});
