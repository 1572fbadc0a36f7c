import { formatIdentity } from '../kernel/identity.js';
import { type CommandShape, isPlainOperand, normalizeCommand } from './approval-command.js';
import { type Autonomy, NO_RULE_PREFIX } from './approval-names.js';
import { type Classification, classifyCommand, type Tier } from './command-classifier.js';

/**
 * The approval engine: per tool call, allow | ask | deny. It weighs the tool's
 * declared effect, the command classifier's tier (for tools that run shell
 * commands), the conversation's autonomy level and operator "always allow"
 * rules (each one exact call, in a scope), over a hard-block floor that nothing lifts.
 */
export type Effect = 'read' | 'write' | 'exec' | 'external_send';
export type Decision = 'allow' | 'ask' | 'deny';

// The names live in their own module: the configuration and the answer parser need them, not the classifier.
export { AUTONOMY_LEVELS, type Autonomy, NO_RULE_PREFIX, SELF_APPROVABLE_TIERS } from './approval-names.js';

export interface ToolCallRequest {
  tool: string;
  /** The tool's declared effect; undeclared tools are treated as mutating (write). */
  effect?: Effect;
  args: unknown;
  /** For tools that run a shell command: the command line, for the classifier. */
  command?: string;
  /** The tool's own guard vets each call (e.g. memory writes and the memory guard). */
  selfGuarded?: boolean;
  /** The effect comes from a third party's word (an MCP server's annotations): at strict, such a call always asks. */
  effectFromThirdParty?: boolean;
}

export { type AllowRule, RULE_SCOPES, type RuleScope } from '../kernel/allow-rule.js';

import type { AllowRule } from '../kernel/allow-rule.js';

/** Where the call is made: which rules are in scope. */
export interface RuleWhere {
  conversationId: string;
  /** The sender's canonical identity (`slack:T1:U1`, `http:<key id>`: kernel/identity.ts), compared as a whole. */
  sender: string;
}

export interface ApprovalPolicy {
  autonomy: Autonomy;
  rules: AllowRule[];
  /** Without it only global rules apply. */
  where?: RuleWhere;
}

/** The key a sender-scoped rule is bound to: the sender's canonical identity. */
export function senderKey(channel: string, senderId: string, workspace?: string): string {
  return formatIdentity({ channel, id: senderId, ...(workspace ? { workspace } : {}) });
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
  if (tier === 'dangerous')
    return { decision: 'ask', tier, reasons: [...reasons, `${NO_RULE_PREFIX}dangerous commands are asked every time`], rulePermitted: false };

  const target = ruleTarget(call);
  if (target.ok) {
    const rule = policy.rules.find((r) => inScope(r, policy.where) && ruleMatches(r, call.tool, target));
    if (rule)
      return {
        decision: 'allow',
        tier,
        reasons: [...reasons, `allowed by operator rule${rule.id !== undefined ? ` #${rule.id}` : ''} (${rule.scope}: ${rule.pattern})`],
        rule,
        rulePermitted: true,
      };
  }

  const vouched = !(call.effectFromThirdParty && policy.autonomy === 'strict');
  if (!vouched) reasons.push(`${call.tool}'s effect is declared by its MCP server, not by Switchboard: at strict autonomy it is asked`);
  const allowed = vouched && (autoAllowed(effect, tier, policy.autonomy) || (call.selfGuarded === true && policy.autonomy !== 'strict'));
  if (!allowed) reasons.push(`${effect} at ${tier} tier needs approval at autonomy "${policy.autonomy}"`);
  if (!target.ok) reasons.push(`${NO_RULE_PREFIX}${target.reason}`);
  return { decision: allowed ? 'allow' : 'ask', tier, reasons, rulePermitted: target.ok };
}

/** What a rule for this call would bind, or why no rule can. */
export type RuleTarget =
  | { ok: true; kind: 'command'; words: string[]; pattern: string }
  | { ok: true; kind: 'args'; pattern: string }
  | { ok: false; reason: string };

export function ruleTarget(call: Pick<ToolCallRequest, 'args' | 'command'>): RuleTarget {
  if (call.command === undefined) return { ok: true, kind: 'args', pattern: canonicalJson(call.args) };
  const shape = normalizeCommand(call.command);
  return shape.ok ? { ok: true, kind: 'command', words: shape.words, pattern: shape.text } : { ok: false, reason: shape.reason };
}

function inScope(r: AllowRule, where: RuleWhere | undefined): boolean {
  if (r.scope === 'global') return true;
  if (!where) return false;
  if (r.scope === 'conversation') return !!r.scopeKey && r.scopeKey === where.conversationId;
  if (r.scope === 'sender') return !!r.scopeKey && r.scopeKey === where.sender;
  return false;
}

const shapes = new Map<string, CommandShape>();

/** A rule's pattern as words (cached: rules are few, calls many). */
function ruleWords(pattern: string): string[] | null {
  let shape = shapes.get(pattern);
  if (!shape) {
    if (shapes.size > 2_000) shapes.clear();
    shape = normalizeCommand(pattern);
    shapes.set(pattern, shape);
  }
  return shape.ok ? shape.words : null;
}

/** Whether the rule allows exactly this call. */
export function ruleMatches(r: AllowRule, tool: string, target: RuleTarget): boolean {
  if (!target.ok || r.tool !== tool) return false;
  const variable = r.variable ?? [];
  if (target.kind === 'args') return r.kind !== 'command' && variable.length === 0 && r.pattern === target.pattern;
  if (r.kind === 'args') return false;
  const words = ruleWords(r.pattern);
  if (!words || words.length !== target.words.length) return false;
  for (let i = 0; i < words.length; i++) {
    if (words[i] === target.words[i]) continue;
    if (i > 0 && variable.includes(i) && isPlainOperand(words[i]!) && isPlainOperand(target.words[i]!)) continue;
    return false;
  }
  return true;
}

/**
 * Checks the variable positions an operator asks for on a rule: only for commands, only word
 * positions after the command name, and only where the approved word is a plain operand (an
 * option or a glob never becomes variable). Returns an error message, or null when fine.
 */
export function checkVariable(pattern: string, kind: 'command' | 'args', variable: number[]): string | null {
  if (!variable.length) return null;
  if (kind !== 'command') return 'only a shell command rule can have variable positions';
  const words = ruleWords(pattern);
  if (!words) return 'this call cannot be a rule';
  for (const i of variable) {
    if (!Number.isInteger(i) || i < 1 || i >= words.length) return `position ${i} is not an argument of \`${pattern}\` (1 to ${words.length - 1})`;
    if (!isPlainOperand(words[i]!)) return `position ${i} (${words[i]}) is an option or expands in the shell; it cannot vary`;
  }
  return null;
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
 * The pattern an "always allow" rule for this call is bound to: a command's canonical text
 * (normalizeCommand), or the arguments as canonical JSON. A command that can never be a rule
 * (chained, piped, substituted, ...) gets its text with white space collapsed, for the record.
 */
export function normalizePattern(call: Pick<ToolCallRequest, 'args' | 'command'>): string {
  const t = ruleTarget(call);
  if (t.ok) return t.pattern;
  return call.command!.trim().replace(/\s+/g, ' ');
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
