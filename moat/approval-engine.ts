import { classifyCommand, type Classification, type Tier } from './command-classifier.js';

/**
 * The approval engine: per tool call, allow | ask | deny. It weighs the tool's
 * declared effect, the command classifier's tier (for tools that run shell
 * commands), the conversation's autonomy level and operator "always allow"
 * rules, over a hard-block floor that nothing lifts.
 */
export type Effect = 'read' | 'write' | 'exec' | 'external_send';
export type Decision = 'allow' | 'ask' | 'deny';

/**
 * strict: only reads run unasked. supervised (default): reads and safe commands
 * run; writes, sends and anything riskier ask. trusted: writes and caution-tier
 * commands run too; sends and dangerous commands still ask.
 */
export type Autonomy = 'strict' | 'supervised' | 'trusted';
export const AUTONOMY_LEVELS: readonly Autonomy[] = ['strict', 'supervised', 'trusted'];

export interface ToolCallRequest {
  tool: string;
  /** The tool's declared effect; undeclared tools are treated as mutating (write). */
  effect?: Effect;
  args: unknown;
  /** For tools that run a shell command: the command line, for the classifier. */
  command?: string;
  /** The tool's own guard vets each call (e.g. memory writes and the memory guard). */
  selfGuarded?: boolean;
}

/** "Always allow" from an operator: bound to a tool and a normalized pattern of its arguments. */
export interface AllowRule {
  tool: string;
  /** normalizePattern() of the approved call; a trailing " *" matches any continuation. */
  pattern: string;
}

export interface ApprovalPolicy {
  autonomy: Autonomy;
  rules: AllowRule[];
}

export interface ApprovalVerdict {
  decision: Decision;
  /** The risk tier used: the classifier's for commands, else derived from the effect. */
  tier: Tier;
  reasons: string[];
  /** The rule that allowed it, if one did. */
  rule?: AllowRule;
  /** Whether an operator may turn this call into an "always allow" rule. */
  rulePermitted: boolean;
}

const EFFECT_TIER: Record<Effect, Tier> = { read: 'safe', write: 'caution', exec: 'caution', external_send: 'caution' };

export function decide(call: ToolCallRequest, policy: ApprovalPolicy): ApprovalVerdict {
  const effect: Effect = call.effect ?? 'write';
  const reasons: string[] = [];
  if (!call.effect) reasons.push(`${call.tool} declares no effect: treated as mutating`);
  let tier: Tier = EFFECT_TIER[effect];
  let cls: Classification | undefined;
  if (call.command !== undefined) {
    cls = classifyCommand(call.command);
    tier = cls.tier;
    reasons.push(...cls.reasons);
  }

  // The floor: no autonomy level or rule lifts it.
  if (tier === 'blocked') return { decision: 'deny', tier, reasons: reasons.length ? reasons : ['hard-blocked'], rulePermitted: false };
  // Dangerous always asks, and never becomes a standing rule.
  if (tier === 'dangerous') return { decision: 'ask', tier, reasons, rulePermitted: false };

  const pattern = normalizePattern(call);
  const rule = policy.rules.find((r) => r.tool === call.tool && patternMatches(r.pattern, pattern));
  if (rule) return { decision: 'allow', tier, reasons: [...reasons, `allowed by an operator rule (${rule.pattern})`], rule, rulePermitted: true };

  const allowed = autoAllowed(effect, tier, policy.autonomy) || (call.selfGuarded === true && policy.autonomy !== 'strict');
  if (!allowed) reasons.push(`${effect} at ${tier} tier needs approval at autonomy "${policy.autonomy}"`);
  return { decision: allowed ? 'allow' : 'ask', tier, reasons, rulePermitted: true };
}

function autoAllowed(effect: Effect, tier: Tier, autonomy: Autonomy): boolean {
  if (effect === 'read' && tier === 'safe') return true;
  if (autonomy === 'strict') return false;
  if (effect === 'external_send') return false; // a message leaving on someone's behalf is always asked
  if (effect === 'exec') return tier === 'safe' || (autonomy === 'trusted' && tier === 'caution');
  // write
  return autonomy === 'trusted';
}

/**
 * The pattern an "always allow" rule is bound to: for commands, the command with
 * white space collapsed; for other tools, the arguments as canonical JSON.
 */
export function normalizePattern(call: Pick<ToolCallRequest, 'args' | 'command'>): string {
  if (call.command !== undefined) return call.command.trim().replace(/\s+/g, ' ');
  return canonicalJson(call.args);
}

export function patternMatches(rulePattern: string, pattern: string): boolean {
  if (rulePattern === '*') return true;
  if (rulePattern.endsWith(' *')) {
    const prefix = rulePattern.slice(0, -2);
    return pattern === prefix || pattern.startsWith(prefix + ' ');
  }
  return rulePattern === pattern;
}

/** JSON with sorted keys: the same arguments always give the same text (and hash). */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}
