import { describe, expect, it } from 'vitest';
import { DEFAULT_TOOLSETS, type PlannedTool, planTools } from '../../moat/planner.js';

const tool = (name: string, toolset: string | undefined, description: string, schemaChars = 0): PlannedTool => ({
  name,
  description,
  ...(toolset ? { toolset } : {}),
  schemaChars,
});

const TOOLS: PlannedTool[] = [
  tool('current_time', 'time', 'Current date and time.', 40),
  tool('memory_recall', 'memory', 'Recall saved notes about the user.', 60),
  tool('memory_write', 'memory', 'Save a durable note about the user.', 90),
  tool('web_fetch', 'web', 'Fetch a URL and return its text.', 120),
  tool('web_search', 'web', 'Search the web.', 80),
  tool('read_file', 'files', 'Read a file from the workspace.', 100),
  tool('write_file', 'files', 'Write a file in the workspace.', 150),
  tool('shell', 'shell', 'Run a shell command in the workspace.', 200),
  tool('calendar_add', 'time', 'Add an event to the calendar.', 110),
];
const cost = (names: string[]) => TOOLS.filter((t) => names.includes(t.name)).reduce((n, t) => n + t.description.length + (t.schemaChars ?? 0), 0);

describe('planTools', () => {
  it('routes a web request to the web toolset plus the core', () => {
    const p = planTools('Can you fetch https://example.com and summarize it?', TOOLS);
    expect(p.fellBack).toBe(false);
    expect(p.toolsets).toEqual(['web']);
    expect(p.tools).toEqual(['current_time', 'memory_recall', 'web_fetch', 'web_search']);
  });

  it('routes files, shell, memory and time intents', () => {
    expect(planTools('Please read notes.txt for me', TOOLS).toolsets).toEqual(expect.arrayContaining(['files']));
    expect(planTools('run the build script', TOOLS).toolsets).toEqual(['shell']);
    expect(planTools('Remember that I like tea', TOOLS).tools).toEqual(['current_time', 'memory_recall', 'memory_write']);
    expect(planTools('What is on my calendar tomorrow?', TOOLS).tools).toEqual(['current_time', 'memory_recall', 'calendar_add']);
  });

  it('always offers the core tools, default or configured', () => {
    for (const req of ['fetch https://x.org', 'run the tests', 'save this to out.txt']) {
      const p = planTools(req, TOOLS);
      expect(p.tools).toContain('current_time');
      expect(p.tools).toContain('memory_recall');
    }
    const p = planTools('fetch https://x.org', TOOLS, { core: ['shell'] });
    expect(p.tools).toEqual(['web_fetch', 'web_search', 'shell']);
  });

  it('computes the prompt chars saved from descriptions and schemas of the tools left out', () => {
    const p = planTools('fetch https://example.com', TOOLS);
    const left = TOOLS.map((t) => t.name).filter((n) => !p.tools.includes(n));
    expect(left).toEqual(['memory_write', 'read_file', 'write_file', 'shell', 'calendar_add']);
    expect(p.promptCharsSaved).toBe(cost(left));
    expect(p.promptCharsSaved).toBeGreaterThan(0);
  });

  it('falls back to every tool when no intent matches', () => {
    const p = planTools('yes, do it', TOOLS);
    expect(p.fellBack).toBe(true);
    expect(p.tools).toEqual(TOOLS.map((t) => t.name));
    expect(p.promptCharsSaved).toBe(0);
    expect(p.reason).toMatch(/no intent/);
  });

  it('offers only the core to an opening message with no intent, and what it asks for otherwise', () => {
    const withUnknown = [...TOOLS, tool('tool_result_page', undefined, 'Read more of a long tool result.', 50)];
    const hi = planTools('hi', withUnknown, { opening: true });
    expect(hi.fellBack).toBe(false);
    expect(hi.tools).toEqual(['current_time', 'memory_recall', 'tool_result_page']);
    expect(hi.reason).toMatch(/opening/);
    expect(hi.promptCharsSaved).toBe(cost(TOOLS.map((t) => t.name).filter((n) => !hi.tools.includes(n))));
    // Every tool stays reachable: by intent or by name in the opening message, and by any follow-up.
    expect(planTools('hi, fetch https://example.com please', TOOLS, { opening: true }).tools).toContain('web_fetch');
    expect(planTools('hi, use shell', TOOLS, { opening: true }).tools).toContain('shell');
    expect(planTools('print: printf hello', TOOLS, { opening: true }).tools).toContain('shell');
    expect(planTools('yes, do it', TOOLS, { opening: false }).tools).toEqual(TOOLS.map((t) => t.name));
  });

  it('offers the union for a few intents and everything for too many', () => {
    const two = planTools('fetch https://example.com and save it to page.txt', TOOLS);
    expect(two.fellBack).toBe(false);
    expect(two.toolsets.sort()).toEqual(['files', 'web']);
    expect(two.tools).toEqual(['current_time', 'memory_recall', 'web_fetch', 'web_search', 'read_file', 'write_file']);

    const many = planTools('fetch the url, save it to a file, run the tests, remember the result, and schedule it for today', TOOLS);
    expect(many.fellBack).toBe(true);
    expect(many.tools).toHaveLength(TOOLS.length);
    expect(many.reason).toMatch(/intents matched/);
    expect(planTools('fetch the url and save it to a file', TOOLS, { maxIntents: 1 }).fellBack).toBe(true);
  });

  it('falls back for a long request', () => {
    const p = planTools('fetch https://example.com ' + 'and more detail '.repeat(200), TOOLS);
    expect(p.fellBack).toBe(true);
    expect(p.reason).toMatch(/long/);
    expect(planTools('fetch https://example.com', TOOLS, { maxRequestChars: 10 }).fellBack).toBe(true);
  });

  it('infers toolsets from tool names and keeps tools of unknown purpose', () => {
    const tools = [tool('web_fetch', undefined, 'Fetch.'), tool('bash_exec', undefined, 'Run.'), tool('translate', undefined, 'Translate text.')];
    const p = planTools('fetch https://example.com', tools);
    expect(p.tools).toEqual(['web_fetch', 'translate']);
  });

  it('leaves MCP toolsets to configuration, and matches them when named', () => {
    const tools = [
      ...TOOLS,
      tool('mcp__github__list_issues', undefined, 'List GitHub issues.', 300),
      tool('mcp__github__create_pr', undefined, 'Open a pull request.', 400),
    ];
    const named = planTools('list my open issues on github', tools);
    expect(named.toolsets).toEqual(['mcp:github']);
    expect(named.tools).toEqual(['current_time', 'memory_recall', 'mcp__github__list_issues', 'mcp__github__create_pr']);

    const configured = planTools('list my open pull requests', tools, { toolsets: { 'mcp:github': [/\bpull requests?\b/i, /\bissues?\b/i] } });
    expect(configured.toolsets).toEqual(['mcp:github']);
    expect(configured.tools).toContain('mcp__github__create_pr');
    expect(configured.tools).not.toContain('web_fetch');
  });

  it('offers a tool the request names', () => {
    const p = planTools(
      'use web_fetch on it',
      TOOLS.filter((t) => t.name !== 'web_search'),
    );
    expect(p.tools).toContain('web_fetch');
  });

  it('tolerates global regexes in caller toolsets', () => {
    const re = /\bdeploy\b/gi;
    const tools = [...TOOLS, tool('deploy_app', 'deploy', 'Deploy.')];
    for (let i = 0; i < 3; i++) expect(planTools('deploy the app', tools, { toolsets: { deploy: [re] } }).toolsets).toEqual(['deploy']);
  });

  it('exports default intent patterns for each built-in toolset', () => {
    expect(Object.keys(DEFAULT_TOOLSETS).sort()).toEqual(['files', 'memory', 'shell', 'time', 'web']);
    expect(DEFAULT_TOOLSETS.web!.some((re) => re.test('search the web for cats'))).toBe(true);
    expect(DEFAULT_TOOLSETS.shell!.some((re) => re.test('git status'))).toBe(true);
    expect(DEFAULT_TOOLSETS.memory!.some((re) => re.test('what is my preference for units'))).toBe(true);
  });

  it('deduplicates tools by name', () => {
    const p = planTools('yes', [TOOLS[0]!, TOOLS[0]!]);
    expect(p.tools).toEqual(['current_time']);
  });
});
