/**
 * Planner guard: offer the model only the tools relevant to the request.
 *
 * Rule-based: each toolset has intent patterns; the tools of every toolset whose
 * patterns match the request are offered, plus a small always-on core. An
 * opening message (no history) that matches no intent ("hi", "thanks") gets the
 * core alone: nothing before it can need more, and the next message, which has
 * history, is offered everything again. When the router is unsure it offers everything:
 *  - no intent matched in a conversation with history (a follow-up like "yes, do it"
 *    needs whatever the turn before needed);
 *  - more than `maxIntents` toolsets matched (a complex request);
 *  - the request is longer than `maxRequestChars`.
 *
 * A tool's toolset is `tool.toolset`, else inferred from its name (`web_fetch` → web,
 * `mcp__github__…` → mcp:github). Tools whose toolset is unknown are always offered:
 * the planner only removes tools whose purpose it knows. A toolset without patterns
 * (e.g. an MCP server nobody configured patterns for) is matched when the request
 * names it ("… on github"), and any tool is offered when the request names it.
 */

export interface PlannedTool {
  name: string;
  description: string;
  toolset?: string;
  /** Size of its JSON schema text. */
  schemaChars?: number;
}

export interface ToolPlan {
  tools: string[];
  toolsets: string[];
  fellBack: boolean;
  reason: string;
  promptCharsSaved: number;
}

export interface PlanOptions {
  /** Always offered when present. Default: current_time, memory_recall and the playbook tools. */
  core?: string[];
  /** Intent patterns per toolset, merged over DEFAULT_TOOLSETS (an entry replaces the default one of that name). */
  toolsets?: Record<string, RegExp[]>;
  /** More matched toolsets than this → offer everything. Default 3. */
  maxIntents?: number;
  /** A request longer than this → offer everything. Default 2000. */
  maxRequestChars?: number;
  /** The request opens the conversation (no history): without an intent, the core alone is offered. */
  opening?: boolean;
}

/** The system prompt points at skill_read for playbooks, so it is always offered (its name alone would file it under files). */
export const DEFAULT_CORE = ['current_time', 'memory_recall', 'skill_list', 'skill_read'];

/** Intent patterns per toolset. `mcp:*` toolsets are left to configuration. */
export const DEFAULT_TOOLSETS: Record<string, RegExp[]> = {
  web: [
    /\bhttps?:\/\//i,
    /\bwww\./i,
    /\burls?\b/i,
    /\blinks?\b/i,
    /\bweb ?sites?\b/i,
    /\bweb ?pages?\b/i,
    /\bfetch(?:ing|ed)?\b/i,
    /\bsearch(?:ing)?\s+(?:the\s+)?(?:web|internet|online|google)\b/i,
    /\b(?:google|look\s+up|browse)\b/i,
    /\bonline\b/i,
    /\bhttps?\b/i,
    /\b[a-z0-9-]+\.(?:com|org|net|io|dev|ai|co|gov|edu)\b/i,
  ],
  files: [
    /\bfiles?\b/i,
    /\bfolders?\b/i,
    /\bdirector(?:y|ies)\b/i,
    /\bread\b/i,
    /\bwrite\b/i,
    /\bsave\b/i,
    /\bpaths?\b/i,
    /\bworkspace\b/i,
    /\b[\w-]+\.(?:txt|md|json|csv|ya?ml|toml|log|ts|js|py|html|xml|pdf|ini|conf|sh)\b/i,
    /(?:^|\s)(?:~|\.{1,2})?\/[\w.-]+\/[\w./-]*/,
  ],
  shell: [
    /\brun\b/i,
    /\bcommands?\b/i,
    /\bterminal\b/i,
    /\bscripts?\b/i,
    /\binstall\b/i,
    /\bbuild\b/i,
    /\btests?\b/i,
    /\bgit\b/i,
    /\b(?:shell|bash|zsh|npm|npx|pnpm|yarn|pip|cargo|docker|kubectl|make)\b/i,
    // A command named is a shell intent too ("print: printf …", "echo hello"): an opening message gets the shell.
    /\b(?:echo|printf|ls|cat|grep|sed|awk|find|curl|wget|python3?|node|tar|du|df|ps|uname|whoami|chmod|mkdir|rm|cp|mv)\b/i,
    /\bexecute\b/i,
    /\bcompile\b/i,
  ],
  memory: [
    /\bremember\b/i,
    /\bforget\b/i,
    /\brecall\b/i,
    /\bmy\s+preferences?\b/i,
    /\bnotes?\b/i,
    /\bmemor(?:y|ies|ize)\b/i,
    // Searching what was said before (conversation_search): "search: …", "what did we discuss earlier".
    /\bsearch(?:ing|es)?\b/i,
    /\bconversations?\b/i,
    /\bearlier\b/i,
    /\blast\s+time\b/i,
    /\b(?:we|i|you)\s+(?:talked|discussed|said|mentioned)\b/i,
  ],
  time: [
    /\btime\b/i,
    /\bdates?\b/i,
    /\btoday\b/i,
    /\btomorrow\b/i,
    /\byesterday\b/i,
    /\bschedule\b/i,
    /\bcalendar\b/i,
    /\bwhat\s+day\b/i,
    /\bo'?clock\b/i,
    /\bremind(?:er)?s?\b/i,
    /\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b/i,
  ],
};

const NAME_HINTS: Array<[RegExp, string]> = [
  // Most specific first: memory_write is memory, not files; web_read is web.
  [/(?:^|[_.:-])(?:memory|remember|recall|forget|notes?|conversation)(?:$|[_.:-])/i, 'memory'],
  [/(?:^|[_.:-])(?:web|http|https|url|browse|browser|fetch|search)(?:$|[_.:-])/i, 'web'],
  [/(?:^|[_.:-])(?:time|date|clock|calendar|schedule)(?:$|[_.:-])/i, 'time'],
  [/(?:^|[_.:-])(?:shell|bash|exec|terminal|command|run)(?:$|[_.:-])/i, 'shell'],
  [/(?:^|[_.:-])(?:files?|fs|read|write|dir|directory|folder|workspace)(?:$|[_.:-])/i, 'files'],
];

function toolsetOf(tool: PlannedTool): string | undefined {
  if (tool.toolset) return tool.toolset;
  const mcp = /^mcp(?:__|[:.])([a-z0-9-]+)/i.exec(tool.name);
  if (mcp) return `mcp:${mcp[1]!.toLowerCase()}`;
  for (const [re, set] of NAME_HINTS) if (re.test(tool.name)) return set;
  return undefined;
}

function matches(re: RegExp, text: string): boolean {
  // String#search ignores `g`/`y` state, so caller-supplied global regexes are safe.
  return text.search(re) >= 0;
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** "mcp:github" → /\bgithub\b/; "web" → /\bweb\b/: the toolset named in the request. */
function nameMentioned(name: string, text: string): boolean {
  const bare = name.replace(/^mcp[:_.]+/i, '');
  if (bare.length < 3) return false;
  const words = bare
    .split(/[_:.\s-]+/)
    .filter(Boolean)
    .map(escapeRe);
  return new RegExp(`\\b${words.join('[\\s_.-]*')}\\b`, 'i').test(text);
}

function toolCost(t: PlannedTool): number {
  return t.description.length + (t.schemaChars ?? 0);
}

export function planTools(request: string, tools: PlannedTool[], opts: PlanOptions = {}): ToolPlan {
  const core = new Set(opts.core ?? DEFAULT_CORE);
  const patterns: Record<string, RegExp[]> = { ...DEFAULT_TOOLSETS, ...(opts.toolsets ?? {}) };
  const maxIntents = opts.maxIntents ?? 3;
  const maxChars = opts.maxRequestChars ?? 2000;

  // First occurrence of a name wins.
  const seen = new Set<string>();
  const unique = tools.filter((t) => (seen.has(t.name) ? false : (seen.add(t.name), true)));
  const setOf = new Map(unique.map((t) => [t.name, toolsetOf(t)] as const));

  const present = new Set([...setOf.values()].filter((s): s is string => !!s));
  const matched: string[] = [];
  for (const [name, res] of Object.entries(patterns)) {
    if (res.some((re) => matches(re, request))) matched.push(name);
  }
  // Toolsets of the offered tools that have no patterns: matched when named.
  for (const name of present) {
    if (!(name in patterns) || patterns[name]!.length === 0) {
      if (nameMentioned(name, request) && !matched.includes(name)) matched.push(name);
    }
  }
  const named = unique.filter((t) => t.name.length >= 3 && new RegExp(`\\b${escapeRe(t.name)}\\b`, 'i').test(request)).map((t) => t.name);
  // Only toolsets some tool belongs to count as intents.
  const intents = matched.filter((s) => present.has(s));

  const all = (reason: string): ToolPlan => ({
    tools: unique.map((t) => t.name),
    toolsets: intents,
    fellBack: true,
    reason,
    promptCharsSaved: 0,
  });

  if (request.length > maxChars) return all(`request is long (${request.length} > ${maxChars} chars): offering every tool`);
  if (intents.length === 0 && named.length === 0 && !opts.opening) return all('no intent matched: offering every tool');
  if (intents.length > maxIntents) return all(`${intents.length} intents matched (> ${maxIntents}): offering every tool`);

  const chosen = new Set(intents);
  const offered: string[] = [];
  let saved = 0;
  for (const t of unique) {
    const set = setOf.get(t.name);
    const keep = core.has(t.name) || set === undefined || chosen.has(set) || named.includes(t.name);
    if (keep) offered.push(t.name);
    else saved += toolCost(t);
  }
  const parts = [
    intents.length ? `intents: ${intents.join(', ')}` : opts.opening && !named.length ? 'an opening message with no intent' : 'no toolset intent',
    named.length ? `named: ${named.join(', ')}` : '',
  ];
  return {
    tools: offered,
    toolsets: intents,
    fellBack: false,
    reason: `${parts.filter(Boolean).join('; ')}; ${unique.length - offered.length} tool(s) left out`,
    promptCharsSaved: saved,
  };
}
