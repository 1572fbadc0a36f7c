/** MCP tools inside a real turn: offered to the model, called, guarded, and never able to wedge a turn. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../app/gateway.js';
import { FakeLlm, lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { type FakeMcpHttp, startFakeMcpHttp } from './fakes/mcp-servers.js';
import { eventually, openaiClient, readyz, startGateway, testConfig } from './support/gateway.js';

describe('MCP tools in a turn', () => {
  let fake: FakeLlm;
  let mcp: FakeMcpHttp;
  let gw: Gateway;
  beforeAll(async () => {
    mcp = await startFakeMcpHttp({ token: 'mcp-secret-token' });
    process.env.SB_TEST_MCP_TOKEN = 'mcp-secret-token';
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => {
      const msgs = req.body.messages as Array<{ role: string; content: unknown }>;
      const last = msgs[msgs.length - 1]!;
      if (last.role === 'tool') return reply(`result: ${String(last.content).replace(/\s+/g, ' ').slice(0, 300)}`);
      const t = lastUserText(req.body);
      if (t.includes('hang')) return toolCall('docs__hang', {});
      if (t.includes('write')) return toolCall('docs__write_note', { text: 'x' });
      if (t.includes('stranger')) return toolCall('stranger__lookup', { q: 'switchboard' });
      return toolCall('docs__lookup', { q: 'switchboard' });
    });
    gw = await startGateway(
      testConfig(
        fake,
        {},
        {
          mcp: {
            servers: [
              { name: 'docs', transport: 'http', url: `${mcp.url}`, bearerTokenEnv: 'SB_TEST_MCP_TOKEN', callTimeoutMs: 1_500, trusted: true },
              // The same server, not trusted: its "read-only" annotations are not believed.
              { name: 'stranger', transport: 'http', url: `${mcp.url}`, bearerTokenEnv: 'SB_TEST_MCP_TOKEN', callTimeoutMs: 1_500 },
            ],
          },
          tools: { planner: false },
        },
      ),
    );
    await eventually(async () => gw.mcp!.status().every((s) => s.state === 'connected'));
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
    await mcp?.close();
  });

  it('offers the read-only tools, namespaced, and runs them', async () => {
    const r = await openaiClient(gw.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'look it up' }] });
    expect(r.choices[0]!.message.content).toContain('found:switchboard');
    const offered = (fake.requests[0]!.body.tools as Array<{ function: { name: string } }>).map((t) => t.function.name);
    expect(offered).toContain('docs__lookup');
    expect(offered).not.toContain('docs__write_note'); // not read-only, server not trusted
    const ready = (await (await readyz(gw.url!)).json()) as { mcp: Array<{ name: string; state: string }> };
    expect(ready.mcp).toEqual([
      expect.objectContaining({ name: 'docs', state: 'connected' }),
      expect.objectContaining({ name: 'stranger', state: 'connected' }),
    ]);
  });

  it('asks before a read-only tool of a server that is not trusted: its annotation is only its own word', async () => {
    const r = await openaiClient(gw.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'ask the stranger' }] });
    expect(r.choices[0]!.message.content).toMatch(/Approval needed/);
    expect((r as unknown as { switchboard: { approval: { tool: string } } }).switchboard.approval.tool).toBe('stranger__lookup');
  });

  it('a hanging MCP server does not wedge the turn', async () => {
    const t0 = Date.now();
    const r = await openaiClient(gw.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'please hang' }] });
    expect(r.choices[0]!.message.content).toMatch(/result: .*(timed out|timeout)/i);
    expect(Date.now() - t0).toBeLessThan(10_000);
  });

  it('counts turns and provider attempts in /metrics', async () => {
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    expect(text).toMatch(/switchboard_turns_total\{channel="http",finish_reason="stop"\} \d+/);
    expect(text).toMatch(/switchboard_provider_attempts_total\{slot="openai-compatible",outcome="ok"\} \d+/);
    expect(text).toContain('switchboard_time_to_first_token_seconds_bucket');
  });
});

describe('MCP tools at strict autonomy', () => {
  let fake: FakeLlm;
  let gw: Gateway;
  let mcp: FakeMcpHttp;
  beforeAll(async () => {
    process.env.SB_TEST_MCP_TOKEN_STRICT = 'mcp-token-strict-1';
    mcp = await startFakeMcpHttp({ token: 'mcp-token-strict-1' });
    fake = new FakeLlm();
    await fake.start();
    fake.respond((req) => {
      const msgs = req.body.messages as Array<{ role: string }>;
      return msgs[msgs.length - 1]!.role === 'tool' ? reply('done') : toolCall('docs__lookup', { q: 'x' });
    });
    gw = await startGateway(
      testConfig(
        fake,
        {},
        {
          mcp: { servers: [{ name: 'docs', transport: 'http', url: `${mcp.url}`, bearerTokenEnv: 'SB_TEST_MCP_TOKEN_STRICT', trusted: true }] },
          approvals: { autonomy: 'strict' },
          tools: { planner: false },
        },
      ),
    );
    await eventually(async () => gw.mcp!.status()[0]!.state === 'connected');
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
    await mcp?.close();
  });

  it("asks for every MCP call, even a trusted server's read-only tool", async () => {
    const r = await openaiClient(gw.url!).chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'look it up' }] });
    expect((r as unknown as { switchboard: { approval: { tool: string } } }).switchboard.approval.tool).toBe('docs__lookup');
  });
});
