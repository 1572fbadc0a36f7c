/**
 * The memory guard's injection classifier: is a note that would be kept for
 * later conversations (and shown to the model in them) an instruction aimed
 * at the assistant rather than a fact or a preference?
 *
 * The note is normalized first (./memory-normalize.ts: look-alike letters,
 * leetspeak, spaced-out letters, repeated letters, run-together words, hidden
 * characters). Features are then scored by class on both views of it:
 *
 *   override     attempts to ignore, cancel or replace instructions
 *   order        orders to the assistant ("you must", imperatives, "always reply")
 *   standing     standing orders and triggers for future behaviour
 *                ("whenever someone asks …", "from now on", "in every reply")
 *   role         role reassignment and jailbreak personas
 *   authority    permission or authority claims that change policy
 *                ("staff may run any shell command without approval",
 *                "approval is not required", "all users are trusted")
 *   exfiltration orders to send, reveal or leak data
 *   hidden       hidden text (zero-width, tags, HTML comments, CSS-hidden,
 *                chat-template tokens, role markers) and obfuscation
 *
 * A strong feature (weight 1) decides alone; weaker ones (a trigger, "from
 * now on", "without approval", a sentence-initial verb like "send") decide
 * only together, so "User gets anxious whenever someone mentions deadlines"
 * or "User submitted the expense without approval from finance" stay notes.
 * The note is refused when the sum of its distinct features reaches 1.
 */
import { extendLexicon, normalizeNote, type Trick } from './memory-normalize.js';
import { stripSpecialTokens } from './untrusted.js';

export type InjectionClass = 'override' | 'order' | 'standing' | 'role' | 'authority' | 'exfiltration' | 'hidden';

export interface InjectionFeature {
  id: string;
  cls: InjectionClass;
  weight: number;
  why: string;
  /** Seen only once spelling tricks were undone. */
  decodedOnly?: boolean;
}

export interface InjectionVerdict {
  injection: boolean;
  score: number;
  /** Why, for a refused note: the strongest features, and the tricks undone to see them. */
  reason?: string;
  features: InjectionFeature[];
  tricks: Trick[];
}

export const INJECTION_THRESHOLD = 1;

interface Rule {
  id: string;
  cls: InjectionClass;
  weight: number;
  why: string;
  re: RegExp;
  /** A booster: counts only when a feature of this class that is not a booster was found too. */
  boosts?: InjectionClass;
}

// ---------------------------------------------------------------------------
// Vocabulary fragments

const ASSISTANT = String.raw`(?:assistant|ai|model|bot|chatbot|llm|agent|gpt|chatgpt|claude|gemini|copilot|switchboard)`;
/** Where a clause starts: an imperative is a verb here. */
const START = String.raw`(?:^|[.!?;:]\s*|\n\s*|[-*•>]\s+|\b(?:please|kindly|then|and\s+then|also|now|ok|okay|from\s+now\s+on|from\s+here\s+on|going\s+forward|henceforth|hereafter|in\s+future|from\s+today)\s*,?\s+)`;
const POLICY_OBJ = String.raw`(?:approvals?|approval\s+(?:step|process|flow|checks?)|confirmations?|permissions?|permission\s+checks?|verifications?|reviews?|sign-?offs?|checks|safety\s+checks?|security\s+checks?|security|safety|guardrails?|restrictions?|rules|policies|policy|filters?|limits?|sandbox(?:ing)?|2fa|mfa|moderation)`;
const POLICY_ACTION = [
  String.raw`(?:run|execute|use|call|invoke|do)\s+(?:any|all|every|arbitrary|whatever|unrestricted|privileged|sudo|root|anything|everything)\b`,
  String.raw`(?:run|execute|use)\s+(?:\w+\s+){0,2}?(?:shell|sudo|shell_exec|file_write|web_fetch)\b`,
  String.raw`(?:run|execute)\s+(?:\w+\s+){0,3}?(?:as\s+root|with\s+sudo|without\s+(?:approval|asking|review|confirmation))`,
  String.raw`(?:skip|bypass|override|ignore|disable|circumvent|avoid|waive|turn\s+off|get\s+around|evade)\s+(?:the\s+|all\s+|any\s+|every\s+)?(?:\w+\s+)?${POLICY_OBJ}`,
  String.raw`(?:approve|authori[sz]e|confirm|sign\s+off\s+on)\s+(?:their|his|her|its|my|our|your)\s+own\b`,
  String.raw`(?:approve|authori[sz]e)\s+(?:any|all|every|everything|anything)\b`,
  String.raw`(?:access|read|see|view|download|export|delete|modify|change|edit|wipe|erase)\s+(?:any|all|every|other|others'?|everyone'?s?|anyone'?s?|other\s+(?:users?|people|senders?)'?s?|the\s+(?:system|admin|operator|server|secret|private|whole))\b`,
  String.raw`(?:grant|give)\s+(?:themselves|himself|herself|itself|users?|anyone|others|people)\s+(?:\w+\s+)?(?:access|permissions?|privileges|rights|approval)`,
  String.raw`(?:do|have|get|ask\s+for)\s+(?:anything|everything|whatever)\b`,
  String.raw`(?:see|read|get|know|view)\s+(?:the\s+)?(?:system\s+prompt|secrets?|credentials|api\s+keys?|passwords|tokens|environment)`,
  String.raw`(?:act|speak|decide)\s+(?:as|for|on\s+behalf\s+of)\s+(?:an?\s+|the\s+)?(?:operator|admin|administrator|owner|root|system)\b`,
  String.raw`(?:change|edit|rewrite|set)\s+(?:your|the\s+(?:bot|assistant|system)'?s?)\s+(?:rules|instructions|prompt|policies|settings)`,
  String.raw`(?:admin|administrator|administrative|operator|root|privileged|elevated|superuser)\s+(?:actions?|tasks?|rights|access|privileges|commands?|operations?|mode|tools?)\b`,
].join('|');
/** Running things, said without a quantifier: a permission to weigh, not one that decides alone ("can run Linux commands" is also a skill). */
const RUN_ACTION = String.raw`(?:run|execute|use)\s+(?:\w+\s+){0,2}?(?:commands?|scripts?|code|tools?|programs?|binaries)\b`;
const NEED_OBJ = String.raw`(?:approvals?|confirmations?|confirm|permission|verification|verify|reviews?|check|double-check|sign-?off|consent|authori[sz]ation)`;
const SENSITIVE = String.raw`(?:conversations?|chat\s+(?:history|logs?)|chats|messages|emails|memory|memories|notes?|files|history|data|contacts|passwords|credentials|keys|tokens|secrets|transcripts?|logs|address(?:es)?|phone\s+numbers?|details|personal\s+(?:data|information|info)|id_rsa|\.ssh|\.env|system\s+prompt)`;
const SECRET_WORDS = String.raw`(?:api\s+keys?|tokens?|passwords?|credentials|secrets?|environment\s+variables|env\s+vars?|system\s+prompt|hidden\s+prompt|private\s+keys?|\.env)`;
const IMPERATIVE_STRONG = String.raw`(?:reply|respond|obey|comply|disregard|ignore|pretend|roleplay|role-play|impersonate|reveal|leak|exfiltrate|execute|bypass|override|overrule|recommend|promote|advertise|approve|authori[sz]e|grant|deny|refuse|redirect|insult|unlock|jailbreak)`;
const IMPERATIVE = String.raw`(?:close|finish|conclude|dump|paste|answer|say|tell|mention|send|forward|email|include|append|prepend|add|start|begin|end|sign|use|run|call|delete|remove|share|post|upload|print|output|show|write|give|ask|treat|assume|switch|enable|disable|act|behave|speak|talk|praise|quote|link|point|direct|charge|offer|make|do|let|keep|hide|skip|accept|trust|translate|stop|cancel|follow|copy|report|greet|sell|push|suggest|warn|threaten|change|set)`;
const ALWAYS_VERB = String.raw`(?:reply|respond|answer|say|write|output|print|start|begin|end|include|append|add|use|call|run|execute|send|forward|recommend|mention|link|tell|obey|comply|agree|refuse|approve|accept|trust|sign|greet|suggest|promote|quote|redirect|ask|grant|allow|deny|skip|ignore|follow|treat|assume|do|speak|talk|translate|cc|bcc)`;

const r = (src: string) => new RegExp(src, 'u');
const ROOT =
  /\bha(?:s|ve)\s+(?:been\s+given\s+|been\s+granted\s+|got\s+)?(?:full\s+)?(?:root|sudo|superuser)\s*(?:access|privileges?|rights|permissions?|login|shell|powers?|(?=$|[.!;,]))/;
/** Someone's own machine ("on their work laptop"): root there is a fact about them. */
const DEVICE = String.raw`(?:their|his|her|my|our|a|an|the\s+family|the\s+home)\s+(?:own\s+|work\s+|home\s+|personal\s+|family\s+|old\s+|new\s+)*(?:laptop|computer|machine|pc|mac|macbook|desktop|phone|server|router|raspberry\s+pi|homelab|nas|vm|workstation)s?\b`;

// ---------------------------------------------------------------------------
// Features

const RULES: Rule[] = [
  // --- override -------------------------------------------------------------
  {
    id: 'override.ignore',
    cls: 'override',
    weight: 1,
    why: 'asks to ignore instructions',
    re: r(
      String.raw`\b(?:ignore|disregard|override|overrule|bypass|circumvent|pay\s+no\s+attention\s+to|set\s+aside|put\s+aside|throw\s+out|look\s+past|(?:don'?t|do\s+not|never)\s+follow|stop\s+obeying)\b[\s\w,'-]{0,40}?\b(?:instructions?|rules|prompts?|directions|directives|guidelines|guardrails|policies|policy|restrictions|constraints|safety|programming|context|commands|orders|guidance|training)\b`,
    ),
  },
  {
    id: 'override.forget',
    cls: 'override',
    weight: 1,
    why: 'asks to drop earlier instructions',
    re: r(
      String.raw`\b(?:forget|skip|drop|abandon|discard|cancel|void|nullify|erase|wipe|reset)\s+(?:\w+\s+){0,3}?(?:all|any|every|your|previous|prior|above|earlier|preceding|original|initial|existing|current|system|operator'?s?|developer'?s?|these|those|its)\s+(?:\w+\s+){0,2}?(?:instructions?|rules|prompts?|directives|guidelines|guardrails|programming|restrictions|constraints|orders|guidance|training)\b`,
    ),
  },
  {
    id: 'override.forget-weak',
    cls: 'override',
    weight: 0.6,
    why: 'asks to drop rules',
    re: r(
      String.raw`\b(?:forget|skip|drop|abandon|discard|cancel|void|nullify)\b[\s\w,'-]{0,40}?\b(?:instructions?|rules|prompts?|directives|guidelines|guardrails|programming|restrictions|constraints)\b`,
    ),
  },
  { id: 'override.disregard', cls: 'override', weight: 1, why: 'asks to disregard something', re: /\bdisregard\b/ },
  {
    id: 'override.forget-all',
    cls: 'override',
    weight: 1,
    why: 'asks to forget what came before',
    re: /\b(?:forget|ignore)\s+(?:everything|all\s+(?:that|of\s+(?:that|this)|above)|what\s+you\s+(?:were|have\s+been)\s+told)\b/,
  },
  {
    id: 'override.void',
    cls: 'override',
    weight: 1,
    why: 'declares the instructions void',
    re: r(
      String.raw`\b(?:previous|prior|above|earlier|original|old|system|operator'?s?|developer'?s?|your|all|the)\s+(?:instructions|rules|guidelines|directives|prompt|orders|policies)\s+(?:from\s+(?:the\s+)?\w+\s+)?(?:are|is|were|have\s+been|has\s+been)\s+(?:now\s+|all\s+)?(?:void|invalid|cancel+ed|revoked|outdated|obsolete|replaced|superseded|wrong|fake|lifted|suspended|no\s+longer\s+(?:valid|apply|in\s+effect|relevant))`,
    ),
  },
  {
    id: 'override.void-after',
    cls: 'override',
    weight: 1,
    why: 'declares the instructions void',
    re: /\b(?:instructions|rules|guidelines|directives|prompt)\s+(?:above|before\s+this|earlier|you\s+were\s+given|you\s+got)\s+(?:are|is|were)\s+(?:\w+\s+)?(?:void|fake|invalid|outdated|obsolete|wrong|cancel+ed|revoked|a\s+test|not\s+real)/,
  },
  {
    id: 'override.void-from',
    cls: 'override',
    weight: 1,
    why: 'declares the instructions void',
    re: /\binstructions\s+from\s+(?:the\s+)?(?:operator|system|developer|admin)s?\s+(?:are|is)\s+(?:\w+\s+)?(?:void|outdated|obsolete|invalid|wrong|fake|cancel+ed|revoked)/,
  },
  {
    id: 'override.not-apply',
    cls: 'override',
    weight: 1,
    why: 'says the rules do not apply',
    re: r(
      String.raw`\b(?:your|the|these|those|any|operator'?s?|system|safety)\s+(?:rules|guidelines|instructions|restrictions|policies|guardrails|filters)\s+(?:do(?:es)?\s*(?:n[o']t|not)|never|no\s+longer)\s+apply\b|\bnothing\s+in\s+(?:your|the)\s+(?:rules|guidelines|instructions|policies)\s+applies\b|\bno\s+(?:\w+\s+)?(?:rules|restrictions|guidelines|limits|filters|policies)\s+(?:apply|exist|are\s+in\s+(?:place|effect))\b`,
    ),
  },
  {
    id: 'override.stop-following',
    cls: 'override',
    weight: 1,
    why: 'asks to stop following instructions',
    re: /\b(?:stop|quit|cease)\s+(?:following|obeying|applying|using|listening\s+to)\s+(?:the\s+|your\s+|all\s+|any\s+)?(?:system\s+prompt|instructions|rules|guidelines|operator|policies|guardrails|safety)/,
  },
  {
    id: 'override.mine-instead',
    cls: 'override',
    weight: 1,
    why: 'asks to follow other instructions instead',
    re: /\b(?:follow|obey|use|apply)\s+(?:mine|my\s+(?:instructions|rules|orders)|(?:these|the\s+following|those)\s+instead)\b|\binstead\s+of\s+(?:the\s+|your\s+)?(?:system\s+prompt|instructions|rules|operator)|\b(?:use|follow)\s+these\s+instead\b/,
  },
  {
    id: 'override.over-operator',
    cls: 'override',
    weight: 1,
    why: "puts something above the operator's rules",
    re: /\b(?:over|above|before|instead\s+of|rather\s+than|regardless\s+of|despite|against)\s+(?:the\s+|your\s+|any\s+|all\s+)?(?:operator'?s?|system|developer'?s?|admin'?s?|safety|original)\s*(?:rules|instructions|prompt|orders|policies|policy|guidelines|settings)\b/,
  },
  {
    id: 'override.operator-rules',
    cls: 'override',
    weight: 0.6,
    why: "talks about the operator's rules",
    re: /\b(?:the\s+)?(?:operator'?s?|system'?s?|developer'?s?)\s+(?:rules|instructions|orders|policies|guidelines|prompt)\b/,
  },
  {
    id: 'override.rules-given',
    cls: 'override',
    weight: 1,
    why: 'says the rules do not apply',
    re: /\b(?:rules|guidelines|instructions|restrictions|policies)\s+(?:you\s+(?:were|have\s+been)\s+(?:given|told)|you\s+follow|you\s+were\s+trained\s+on|of\s+this\s+(?:bot|assistant|system))\s+(?:\w+\s+)?(?:no\s+longer|do\s*(?:n[o']t|not)|never)\s+(?:apply|matter|count)/,
  },
  {
    id: 'override.new-instructions',
    cls: 'override',
    weight: 0.6,
    why: 'announces new instructions',
    re: /\b(?:new|updated|additional|hidden|secret|real|true)\s+(?:instructions?|rules|directives?|orders)\b/,
  },
  {
    id: 'override.your-new',
    cls: 'override',
    weight: 1,
    why: 'announces new instructions',
    re: /\b(?:your|these\s+are\s+(?:the|your))\s+(?:new|updated|real|true|actual)\s+(?:instructions?|rules|directives?|orders|guidelines|task|role|goal)\b/,
  },
  { id: 'override.new-rule', cls: 'override', weight: 0.6, why: 'announces a new rule', re: /\bnew\s+rule\b/ },
  {
    id: 'override.obey',
    cls: 'override',
    weight: 1,
    why: 'order to obey',
    re: /\b(?:obey|comply\s+with)\s+(?:these|the\s+following|this|my|all|only|every|any|him|her|them)\b/,
  },

  // --- order ----------------------------------------------------------------
  {
    id: 'order.on-behalf',
    cls: 'order',
    weight: 1,
    why: 'speaks for the operator',
    re: /\b(?:the\s+)?(?:operator|admin|administrator|developer|system|owner|creator)s?\s+(?:wants?|says?|said|asked|asks|told|tells|instructs?|instructed|requires?|needs?|would\s+like|has\s+decided|decided)\s+(?:that\s+)?(?:you|the\s+assistant|the\s+bot|the\s+ai)\b/,
  },
  {
    id: 'order.approve-every',
    cls: 'order',
    weight: 0.6,
    why: 'blanket approval order',
    re: /\b(?:approve|accept|grant|allow|execute|run|confirm)\s+(?:every|all|any|each)\s+(?:\w+\s+)?(?:requests?|commands?|calls?|actions?|approvals?|permissions?|transfers?|payments?)\b/,
  },
  {
    id: 'order.you-must',
    cls: 'order',
    weight: 1,
    why: 'order to the assistant ("you must …")',
    re: /\byou\s+(?:must|shall|will\s+(?:now|always|never|only)|have\s+to|are\s+(?:required|supposed|expected|instructed|ordered|told)\s+to|are\s+to\b|need\s+to|should\s+(?:always|never|now|only|not|no\s+longer)|may\s+now|can\s+now|are\s+now\s+(?:allowed|permitted|free)|no\s+longer\s+(?:need|have)\s+to|don'?t\s+(?:need|have)\s+to|do\s+not\s+(?:need|have)\s+to)\b/,
  },
  {
    id: 'order.assistant-must',
    cls: 'order',
    weight: 1,
    why: 'order to the assistant',
    re: r(
      String.raw`\b(?:the\s+)?${ASSISTANT}\s+(?:must|shall|should\s+(?:always|never|now|not|only)|is\s+required\s+to|has\s+to|will\s+now|needs\s+to|is\s+to|may\s+now|can\s+now|is\s+(?:now\s+)?(?:allowed|permitted)\s+to|is\s+not\s+allowed\s+to)\b`,
    ),
  },
  {
    id: 'order.addressed',
    cls: 'order',
    weight: 1,
    why: 'order addressed to the assistant',
    re: r(String.raw`(?:^|[.!?;]\s*)(?:${ASSISTANT}|you)\s*[,:]\s*(?:\w+\s+){0,2}?(?:${IMPERATIVE_STRONG}|${IMPERATIVE})\b`),
  },
  { id: 'order.imperative', cls: 'order', weight: 1, why: 'an order to the assistant, not a fact', re: r(String.raw`${START}${IMPERATIVE_STRONG}\b`) },
  {
    id: 'order.tell-everyone',
    cls: 'order',
    weight: 1,
    why: 'tells the assistant what to tell people',
    re: r(
      String.raw`${START}(?:tell|inform|notify|warn|assure|convince|advise|instruct)\s+(?:anyone|anybody|everyone|everybody|users|people|customers?|clients?|callers?|visitors?|them|whoever|all|every\s+\w+|any\s+\w+)\b`,
    ),
  },
  {
    id: 'order.skip-checks',
    cls: 'order',
    weight: 1,
    why: 'asks to skip checks',
    re: r(String.raw`${START}(?:skip|bypass|waive|drop|disable|turn\s+off|ignore|avoid|omit)\s+(?:the\s+|all\s+|any\s+|every\s+)?(?:\w+\s+)?${POLICY_OBJ}`),
  },
  {
    id: 'order.trust-claims',
    cls: 'order',
    weight: 1,
    why: 'asks to believe claims unchecked',
    re: /\b(?:trust|believe|accept)\s+(?:everything|anything|whatever|all(?:\s+that)?)\s+(?:the\s+user|users|they|he|she|\w+)\s+(?:says?|claims?|tells?|writes?)\b|\b(?:trust|believe|accept)\s+(?:the\s+user'?s?|their|his|her)\s+(?:claims?|word)\b/,
  },
  {
    id: 'order.scripted-reply',
    cls: 'order',
    weight: 0.6,
    why: 'scripts a reply',
    re: r(String.raw`${START}(?:answer|reply|respond|say|write|tell)\b[^.!?]*?\b(?:with|saying|that)\s*["'“]`),
  },
  {
    id: 'order.stop-doing',
    cls: 'order',
    weight: 1,
    why: 'asks to stop a safeguard',
    re: r(
      String.raw`${START}(?:stop|quit|cease|no\s+more)\s+(?:warning|telling|asking|checking|refusing|flagging|reporting|logging|mentioning|adding|including|saying|questioning|verifying|confirming|escalating)\b`,
    ),
  },
  {
    id: 'order.imperative-weak',
    cls: 'order',
    weight: 0.6,
    why: 'phrased as an order',
    re: r(String.raw`${START}${IMPERATIVE}\b(?!\s*(?:date|time|of|:|is|was|are))`),
  },
  {
    id: 'order.always',
    cls: 'order',
    weight: 1,
    why: 'standing order to the assistant',
    re: r(String.raw`(?:${START}|\b(?:${ASSISTANT}|and|must|should|shall|will)\s+)(?:always|only|never|just)\s+(?:\w+ly\s+)?${ALWAYS_VERB}\b`),
  },
  {
    id: 'order.never-refuse',
    cls: 'order',
    weight: 1,
    why: 'order never to refuse or ask',
    re: /\bnever\s+(?:refuse|decline|question|say\s+no\s+to|ask\s+(?:for\s+)?(?:confirmation|approval|permission))\b/,
  },
  {
    id: 'order.do-whatever',
    cls: 'order',
    weight: 1,
    why: 'order to do whatever is asked',
    re: /\bdo\s+(?:whatever|anything|everything)\s+(?:the\s+user|they|he|she|i|\w+)\s+(?:says?|asks?|wants?|tells?|requests?|demands?)/,
  },
  {
    id: 'order.make-sure',
    cls: 'order',
    weight: 0.6,
    why: 'phrased as an order',
    re: r(String.raw`${START}(?:make\s+sure|be\s+sure|ensure|remember)\s+(?:to|that\s+you|you)\b`),
  },
  { id: 'order.execute', cls: 'order', weight: 1, why: 'asks to execute something', re: /\bexecute\s+(?:the\s+)?(?:following|this|these)\b/ },
  { id: 'order.curl-sh', cls: 'order', weight: 1, why: 'piped download-and-run', re: /\b(?:curl|wget)\s+\S+\s*\|\s*(?:sh|bash|zsh|python3?)\b/ },
  {
    id: 'order.to-be',
    cls: 'order',
    weight: 0.6,
    why: 'tells how requests are to be handled',
    re: /\b(?:are|is)\s+to\s+be\s+(?:refused|denied|ignored|answered|approved|rejected|executed|obeyed|followed|deleted)\b/,
  },
  {
    id: 'order.note-to',
    cls: 'order',
    weight: 1,
    why: 'note addressed to the model',
    re: r(String.raw`\bnote\s+(?:to|for)\s+(?:the\s+)?(?:${ASSISTANT}|future\s+(?:${ASSISTANT}|sessions?|conversations?))\b`),
  },
  {
    id: 'order.attention',
    cls: 'order',
    weight: 1,
    why: 'message addressed to the model',
    re: r(String.raw`\b(?:attention|hey|dear|important(?:\s+for)?|instructions?\s+for)\s*[,:!]?\s+(?:the\s+)?${ASSISTANT}\b`),
  },

  // --- standing orders and triggers -----------------------------------------
  {
    id: 'standing.from-now-on',
    cls: 'standing',
    weight: 0.6,
    why: 'standing order ("from now on")',
    re: /\bfrom\s+(?:now|this\s+point|here)\s+on(?:wards?)?\b|\bfrom\s+this\s+point\s+forward\b/,
  },
  {
    id: 'standing.going-forward',
    cls: 'standing',
    weight: 1,
    why: 'standing order ("going forward")',
    re: /\b(?:going|moving)\s+forward,?\s+(?:you|always|never|reply|respond|answer|only)\b/,
  },
  {
    id: 'standing.future',
    cls: 'standing',
    weight: 1,
    why: 'standing order for future conversations',
    re: /\b(?:in|for|during)\s+(?:all|every|each|any)\s+(?:future\s+)?(?:conversations?|chats?|sessions?)\b|\b(?:in|for|during)\s+(?:all|every|each|any)\s+future\s+(?:replies|responses|answers|messages)\b/,
  },
  {
    id: 'standing.future-weak',
    cls: 'standing',
    weight: 0.6,
    why: 'meant for future conversations',
    re: /\b(?:in|for|during)\s+(?:future|later|upcoming|subsequent)\s+(?:conversations?|chats?|sessions?)\b|\bfor\s+the\s+rest\s+of\s+(?:this|the)\s+(?:conversation|chat|session)\b|\buntil\s+(?:told\s+otherwise|further\s+notice)\b/,
  },
  {
    id: 'standing.trigger',
    cls: 'standing',
    weight: 0.6,
    why: 'trigger for future behaviour',
    re: /\b(?:whenever|every\s+time|each\s+time|any\s*time|when|if|once|next\s+time|as\s+soon\s+as)\s+(?:the\s+|a\s+|an\s+|any\s+|this\s+|that\s+)?(?:\w+\s+)?(?:asks?|says?|mentions?|types?|writes?|sends?|requests?|wants?|brings?\s+up|talks?\s+about|logs?\s+in|messages?|contacts?|is\s+not\s+around|are\s+not\s+around|comes?\s+up|is\s+(?:away|offline|asleep)|(?:are|is|gets?|get)\s+(?:asked|told|questioned))\b/,
  },
  {
    id: 'standing.when-asked',
    cls: 'standing',
    weight: 0.6,
    why: 'trigger for future behaviour',
    re: /\b(?:whenever|when|if|once)\s+(?:asked|told|questioned|prompted|contacted|messaged)\b|\b(?:when|if)\s+(?:in\s+doubt|unsure|uncertain|possible)\b|\bby\s+default\b/,
  },
  {
    id: 'standing.then-do',
    cls: 'standing',
    weight: 0.6,
    why: 'tells the assistant what to do then',
    re: r(String.raw`,\s*(?:then\s+|just\s+|always\s+|simply\s+)?(?:${IMPERATIVE_STRONG}|${IMPERATIVE})\b(?!\s*(?:date|time|of|is|was|are)\b)`),
  },
  {
    id: 'standing.every-reply',
    cls: 'standing',
    weight: 0.5,
    why: 'meant for every reply',
    re: /\b(?:every|each|all|any)\s+(?:(?:future|single|new|of\s+your|of\s+the|\w+)\s+)?(?:reply|replies|response|responses|answer|answers|message|messages|email|emails)\b/,
  },
  {
    id: 'standing.every-user',
    cls: 'standing',
    weight: 0.5,
    why: 'meant for everyone',
    re: /\b(?:every|all|each|any)\s+(?:\w+\s+)?(?:users?|customers?|people|senders?|members?|visitors?|callers?|questions?|requests?|one|body)\b/,
  },

  // --- role -----------------------------------------------------------------
  {
    id: 'role.you-are-now',
    cls: 'role',
    weight: 1,
    why: 'role reassignment ("you are now")',
    re: /\byou(?:\s+are|'re)\s+(?:now|no\s+longer)\b|\byou\s+are\s+(?:an?\s+|the\s+)?\w+(?:\s+\w+)?\s+now\b/,
  },
  {
    id: 'role.upgraded',
    cls: 'role',
    weight: 1,
    why: 'claims the assistant was changed',
    re: /\byou\s+(?:have\s+been|were|are\s+being|'ve\s+been)\s+(?:upgraded|unlocked|freed|jailbroken|reprogrammed|liberated|updated|patched|promoted|reconfigured|released)\b/,
  },
  {
    id: 'role.work-for',
    cls: 'role',
    weight: 1,
    why: 'role reassignment',
    re: /\byou\s+(?:now\s+)?(?:work|answer|report|belong)\s+(?:only\s+)?(?:for|to)\s+\S+(?:\s+now)?|\byou\s+now\s+(?:work|answer|report|belong|speak)\b/,
  },
  { id: 'role.you-will-now', cls: 'role', weight: 1, why: 'role reassignment', re: /\byou\s+(?:will|shall|must|should)\s+now\b/ },
  {
    id: 'role.your-role',
    cls: 'role',
    weight: 1,
    why: 'role reassignment',
    re: /\byour\s+(?:(?:new|true|real|actual|only|main|primary|secret|hidden|sole)\s+)?(?:instructions|rules|role|task|goal|purpose|directive|persona|identity|name|job|mission|objective|priority)\s+(?:is|are)\b/,
  },
  {
    id: 'role.act-as',
    cls: 'role',
    weight: 1,
    why: 'role-play jailbreak',
    re: /\b(?:act|behave|respond|speak)\s+(?:as|like)\s+(?:if\s+you\s+(?:are|were)|an?\s+(?:unfiltered|unrestricted|uncensored|evil|different|jailbroken)|dan\b|root\b|an?\s+(?:admin|administrator|operator|superuser|hacker|sysadmin)\b|the\s+(?:system|operator|admin|administrator|developer|root))/,
  },
  { id: 'role.pretend', cls: 'role', weight: 0.6, why: 'role-play jailbreak', re: /\bpretend\s+(?:to\s+be|that\s+you|you\s+are|you're)\b/ },
  {
    id: 'role.roleplay',
    cls: 'role',
    weight: 0.6,
    why: 'role-play jailbreak',
    re: /\b(?:role-?play|roleplay)\s+as\b|\b(?:assume|adopt|take\s+on|play)\s+the\s+(?:role|persona|identity|character)\s+of\b/,
  },
  { id: 'role.dan', cls: 'role', weight: 1, why: 'jailbreak persona', re: /\bdo\s+anything\s+now\b/ },
  {
    id: 'role.mode',
    cls: 'role',
    weight: 1,
    why: 'jailbreak persona',
    re: /\b(?:enable|enter|activate|switch\s+(?:in)?to|turn\s+on|unlock|are\s+(?:now\s+)?(?:in\s+)?|act\s+as|become|you'?re\s+(?:now\s+)?(?:in\s+)?)\s*(?:the\s+|a\s+)?(?:dan|developer\s+mode|dev\s+mode|god\s+mode|admin\s+mode|sudo\s+mode|root\s+mode|unrestricted\s+mode|jailbreak\s+mode|evil\s+mode|debug\s+mode|maintenance\s+mode)\b/,
  },
  {
    id: 'role.mode-on',
    cls: 'role',
    weight: 1,
    why: 'jailbreak persona',
    re: /\b(?:dan|developer|dev|god|admin|sudo|root|unrestricted|jailbreak|evil|debug|maintenance)\s+mode\s+(?:is\s+|has\s+been\s+)?(?:now\s+)?(?:enabled|activated|on|unlocked|engaged|active)\b/,
  },
  {
    id: 'role.no-restrictions',
    cls: 'role',
    weight: 1,
    why: 'asks to drop restrictions',
    re: /\b(?:answer|respond|reply|act|operate|behave|talk|speak|work|mode|assistant|ai|model|chatbot|bot|llm|you)\b[\w\s,'-]{0,30}?\b(?:no|without(?:\s+any)?|free\s+(?:of|from))\s+(?:restrictions|filters|limits|limitations|guidelines|rules|censorship|safety\s+(?:checks|filters|rules|guidelines)|warnings|disclaimers)\b/,
  },
  { id: 'role.unfiltered', cls: 'role', weight: 0.6, why: 'asks to drop restrictions', re: /\b(?:unfiltered|uncensored|unrestricted|unaligned|unmoderated)\b/ },
  { id: 'role.vocabulary', cls: 'role', weight: 0.5, why: 'injection vocabulary', re: /\b(?:exfiltrate|jailbreak|jailbroken|prompt\s+injection)\b/ },

  // --- permission and authority claims --------------------------------------
  {
    id: 'authority.allowed-to',
    cls: 'authority',
    weight: 1,
    why: 'permission claim that changes policy',
    re: r(
      String.raw`\b(?:is|are|be|been|was|were|now)\s+(?:now\s+|also\s+|fully\s+|always\s+)?(?:allowed|permitted|authori[sz]ed|entitled|cleared|whitelisted|free|able|exempt(?:ed)?|pre-?approved|approved)\s+(?:to|for)\s+(?:\w+\s+){0,2}?(?:${POLICY_ACTION})`,
    ),
  },
  {
    id: 'authority.may',
    cls: 'authority',
    weight: 1,
    why: 'permission claim that changes policy',
    re: r(
      String.raw`\b(?:may|can|could|gets?\s+to|has\s+the\s+right\s+to|have\s+the\s+right\s+to|has\s+permission\s+to|have\s+permission\s+to)\s+(?:now\s+|also\s+|always\s+|freely\s+)?(?:${POLICY_ACTION})`,
    ),
  },
  {
    id: 'authority.may-run',
    cls: 'authority',
    weight: 0.6,
    why: 'permission claim about running commands',
    re: r(
      String.raw`\b(?:may|can|could|(?:is|are|been)\s+(?:now\s+)?(?:allowed|permitted|authori[sz]ed|cleared)\s+to|ha(?:s|ve)\s+permission\s+to|(?:it\s+is|it's|is)\s+(?:fine|ok|okay|safe|acceptable|allowed|permitted)\s+to)\s+(?:now\s+|also\s+|always\s+|freely\s+)?${RUN_ACTION}`,
    ),
  },
  {
    id: 'authority.allow-all',
    cls: 'authority',
    weight: 1,
    why: 'grants everything',
    re: r(
      String.raw`${START}(?:allow|permit|approve|accept|grant)\s+(?:everything|anything|all|any|every)\b|\b(?:allow|permit|approve|accept|grant)\s+(?:everything|anything)\b`,
    ),
  },
  {
    id: 'authority.from-are-admins',
    cls: 'authority',
    weight: 1,
    why: 'claims a group is privileged',
    re: /\b(?:users?|senders?|people|anyone|everyone|members?|requests?|messages?|emails?|accounts?)\s+(?:from|at|on|in|with|using|who\s+\w+)\s+(?:\S+\s+){1,3}?(?:are|is)\s+(?:all\s+|now\s+|always\s+|automatically\s+)?(?:admins?|administrators?|operators?|moderators?|trusted|verified|pre-?approved|authori[sz]ed|privileged|superusers?)\b/,
  },
  {
    id: 'authority.no-approval-needed',
    cls: 'authority',
    weight: 0.6,
    why: 'claims no approval is needed',
    re: /\bno\s+(?:approvals?|confirmations?|permission|verification|reviews?|sign-?offs?|checks?)\s+(?:is\s+|are\s+)?(?:needed|required|necessary)\b|\b(?:needs?|requires?)\s+no\s+(?:approvals?|confirmations?|permission|verification|reviews?|sign-?offs?|checks?)\b/,
  },
  {
    id: 'authority.no-approval-needed-unqualified',
    cls: 'authority',
    weight: 0.6,
    why: 'claims no approval is needed',
    re: /(?:\bno\s+(?:approvals?|confirmations?|permission|verification|reviews?|sign-?offs?|checks?)\s+(?:is\s+|are\s+)?(?:needed|required|necessary)|\b(?:needs?|requires?)\s+no\s+(?:approvals?|confirmations?|permission|verification|reviews?|sign-?offs?|checks?))\s*(?:[.!;,]|$|\s+(?:before|when|for\s+(?:this|any|all|every)\b|to\s+(?:run|execute|delete|send|use|call|change|access|approve|write)))/,
  },
  {
    id: 'authority.passive',
    cls: 'authority',
    weight: 0.6,
    why: 'permission claim about the tools',
    re: /\b(?:tools?|commands?|shell|scripts?|files?|anything|everything|the\s+sandbox|approvals?|checks)\s+(?:may|can|could|are\s+allowed\s+to|are\s+permitted\s+to)\s+(?:now\s+|freely\s+|always\s+)?be\s+(?:used|run|executed|called|deleted|accessed|bypassed|skipped|ignored|overridden)\b/,
  },
  {
    id: 'authority.nobody-needs',
    cls: 'authority',
    weight: 0.6,
    why: 'claims no approval is needed',
    re: /\b(?:nobody|no\s+one|noone|none\s+of\s+(?:us|them))\s+(?:needs?\s+to|has\s+to|must|should)\s+(?:\w+\s+)?(?:confirm|approve|check|review|verify|sign\s+off)\b/,
  },
  {
    id: 'authority.no-step',
    cls: 'authority',
    weight: 0.6,
    why: 'claims there is no approval step',
    re: /\bno\s+(?:approval|confirmation|permission|verification|review|sign-?off)\s+(?:step|process|check|gate|flow|stage|prompt)s?\b/,
  },
  {
    id: 'authority.dont-bother',
    cls: 'authority',
    weight: 1,
    why: 'asks not to ask for approval',
    re: /\b(?:don'?t|do\s+not|no\s+need\s+to|never)\s+(?:bother|worry\s+about)\s+(?:\w+\s+)?(?:asking|getting|requesting|waiting|checking)\s+(?:for\s+|with\s+)?(?:\w+\s+)?(?:approvals?|confirmations?|permission|anyone|the\s+operator)\b/,
  },
  {
    id: 'authority.policy-scope',
    cls: 'authority',
    weight: 0.4,
    why: "scoped to this assistant's actions",
    boosts: 'authority',
    re: /\bfor\s+(?:file\s+|tool\s+)?(?:deletions?|commands?|tool\s+calls?|shell|payments?|transfers?|deploys?|deployments?)\b|\bhere\s*(?:[.!;]|$)|\bin\s+this\s+(?:chat|conversation|workspace|channel)\b/,
  },
  {
    id: 'authority.anymore',
    cls: 'authority',
    weight: 0.4,
    why: 'says a check was dropped',
    boosts: 'authority',
    re: /\b(?:anymore|any\s+more|no\s+longer|from\s+now\s+on|for\s+this\s+(?:user|sender|account|conversation|chat|channel|workspace))\b/,
  },
  {
    id: 'authority.permission',
    cls: 'authority',
    weight: 0.4,
    why: 'permission claim',
    re: /\b(?:is|are|was|were|been)\s+(?:now\s+)?(?:allowed|permitted|authori[sz]ed|entitled|cleared)\s+to\b|\bha(?:s|ve)\s+permission\s+to\b|\b(?:may|can)\s+(?:freely|always)\b|\bfreely\b/,
  },
  {
    id: 'authority.without-approval',
    cls: 'authority',
    weight: 0.6,
    why: 'claims no approval is needed',
    re: /\bwithout\s+(?:(?:any|an?|the|my|your|their|prior|further|operator|human|explicit|manager|managers'?|admin|supervisor|user|separate|extra|formal)\s+){0,2}(?:approvals?|confirmations?|confirming|asking(?:\s+(?:first|anyone|for\s+\w+))?|permission|reviews?|reviewing|verification|verifying|checks?|checking|oversight|sign-?off|being\s+asked|prompting|a\s+prompt|question(?:s|ing)?|hesitation)\b/,
  },
  {
    id: 'authority.may-act-unchecked',
    cls: 'authority',
    weight: 0.4,
    why: 'permission to act without approval',
    re: /\b(?:may|can|could|(?:is|are)\s+(?:allowed|permitted|authori[sz]ed|free|fine|ok|okay)\s+to)\s+(?:\w+\s+){0,2}?(?:delete|remove|wipe|erase|run|execute|install|deploy|send|email|transfer|pay|change|modify|edit|write|overwrite|access|approve|restart|shut\s+down|kill|drop|push|publish|post|share|download|upload|read)\b[^.;!?]{0,60}?\bwithout\s+(?:\w+\s+){0,2}?(?:approvals?|confirmations?|asking|permission|reviews?|verification|checks?|checking|oversight|sign-?off)\b/,
  },
  {
    id: 'authority.no-need',
    cls: 'authority',
    weight: 0.6,
    why: 'claims no approval is needed',
    re: r(
      String.raw`\b(?:no\s+(?:need|requirement)\s+(?:to|for)|(?:does|do|did)\s*(?:n[o']t|not)\s+(?:need|require|have\s+to)(?:\s+to)?|needn'?t|need\s+not|never\s+needs?\s+to)\s+(?:ask\s+(?:for\s+)?|get\s+|request\s+|wait\s+for\s+|seek\s+|obtain\s+)?(?:an?\s+|the\s+|any\s+|my\s+|their\s+)?(?:\w+\s+)?${NEED_OBJ}\b`,
    ),
  },
  {
    id: 'authority.no-need-unqualified',
    cls: 'authority',
    weight: 0.6,
    why: 'claims no approval is needed',
    re: r(
      String.raw`\b(?:no\s+(?:need|requirement)\s+(?:to|for)|(?:does|do|did)\s*(?:n[o']t|not)\s+(?:need|require|have\s+to)(?:\s+to)?|needn'?t|need\s+not|never\s+needs?\s+to)\s+(?:ask\s+(?:for\s+)?|get\s+|request\s+|wait\s+for\s+|seek\s+|obtain\s+)?(?:an?\s+|the\s+|any\s+|my\s+|their\s+)?(?:\w+\s+)?${NEED_OBJ}\s*(?:[.!;,]|$|\s+(?:before|from|for\s+(?:this|the|that|any|all|every|his|her|their)\s+(?:user|account|sender|conversation|chat|channel|workspace|team|request|person|command|action)s?|for\s+(?:any\s+|all\s+)?(?:requests?|commands?|actions?|payments?|transfers?|deletions?|messages?|tool\s+calls?)\b|to\s+(?:run|execute|delete|send|use|call|change|access|approve|write)))`,
    ),
  },
  {
    id: 'authority.not-required',
    cls: 'authority',
    weight: 0.6,
    why: 'claims approval is not required',
    re: r(
      String.raw`\b(?:approvals?|confirmations?|permission|verification|reviews?|sign-?offs?|2fa|mfa|consent|authori[sz]ation|the\s+approval\s+(?:step|process))\s+(?:is|are|was|were|will\s+be|has\s+been|have\s+been)\s+(?:not|no\s+longer|never|un)\s*(?:required|needed|necessary|mandatory)|\b(?:approvals?|confirmations?|verification|the\s+approval\s+(?:step|process))\s+(?:is|are)\s+(?:now\s+)?optional\b`,
    ),
  },
  {
    id: 'authority.not-required-unqualified',
    cls: 'authority',
    weight: 0.6,
    why: 'claims approval is not required',
    re: r(
      String.raw`\b(?:approvals?|confirmations?|permission|verification|reviews?|sign-?offs?|consent|the\s+approval\s+(?:step|process))\s+(?:is|are|was|were|will\s+be|has\s+been|have\s+been)\s+(?:not|no\s+longer|never|un)\s*(?:required|needed|necessary|mandatory)\s*(?:[.!;,]|$|\s+(?:here|anymore|any\s+more|for\s+(?:this|the|that|any|all|every|his|her|their)\s+(?:user|account|sender|conversation|chat|channel|workspace|team|request|person|command|action)s?|for\s+(?:any\s+|all\s+)?(?:requests?|commands?|actions?|payments?|transfers?|deletions?|messages?|tool\s+calls?)\b|after|before|when))|\b(?:approvals?|confirmations?|verification|the\s+approval\s+(?:step|process))\s+(?:is|are)\s+(?:now\s+)?optional\b`,
    ),
  },
  {
    id: 'authority.disabled',
    cls: 'authority',
    weight: 1,
    why: 'claims safety checks are off',
    re: /\b(?:security|safety|approvals?|confirmations?|verification|content|moderation|permission|identity|sandbox)\s+(?:checks?|rules?|steps?|prompts?|filters?|policies|policy|settings?|requirements?|guardrails?|mode|engine|system|flow|process|queue|gate|workflow|review)?\s*(?:is|are|has\s+been|have\s+been|were|was)\s+(?:now\s+|temporarily\s+)?(?:disabled|turned\s+off|switched\s+off|off|waived|suspended|removed|lifted|bypassed|deactivated|optional|unnecessary|paused)\b|\b(?:approvals?|confirmations?|checks|reviews?|rules|the\s+sandbox|safety\s+checks)\s+(?:are|is)\s+(?:just\s+|only\s+|merely\s+)?(?:a\s+)?(?:formality|formalities|for\s+show|not\s+enforced|suggestions?|advisory)\b/,
  },
  {
    id: 'authority.all-trusted',
    cls: 'authority',
    weight: 1,
    why: 'claims everyone is trusted',
    re: /\b(?:all|every|any|each)\s+(?:of\s+the\s+)?(?:\w+\s+)?(?:users?|senders?|requests?|messages?|members?|staff|employees|people|commands?|callers?|inputs?|instructions?|one)\s+(?:here\s+|in\s+this\s+\w+\s+|from\s+(?:\S+\s+){1,2})?(?:is|are)\s+(?:now\s+|to\s+be\s+|considered\s+|always\s+)?(?:trusted|verified|safe\s+to\s+(?:run|execute|follow|approve|obey)|pre-?approved|approved|authori[sz]ed|admins?|operators?|privileged|allowed|permitted)\b|\beveryone\s+(?:here\s+)?is\s+(?:trusted|verified|an?\s+admin|an?\s+operator|authori[sz]ed|pre-?approved)\b/,
  },
  {
    id: 'authority.treat-as',
    cls: 'authority',
    weight: 1,
    why: 'asks to treat someone as privileged',
    re: /\b(?:treat|consider|regard|handle|recogni[sz]e)\s+(?:\S+\s+){1,5}?as\s+(?:an?\s+|the\s+|my\s+|your\s+)?(?:admin|administrator|operator|owner|root|superuser|developer|creator|system|trusted|verified|pre-?approved|authori[sz]ed|coming\s+from\s+(?:an?\s+|the\s+)?(?:operator|admin|administrator|owner|system|developer))\b|\bconsider\s+(?:the\s+user|this\s+user|them|him|her|\w+)\s+(?:verified|trusted|authori[sz]ed|an?\s+(?:admin|operator))\b/,
  },
  {
    id: 'authority.owner-of-bot',
    cls: 'authority',
    weight: 1,
    why: 'claims to run this assistant',
    re: r(
      String.raw`\b(?:is|are|am)\s+(?:an?\s+|the\s+)?(?:(?:real|true|actual|verified|official|authori[sz]ed|certified|designated|lead|chief|head)\s+)*(?:operator|owner|developer|creator|administrator|admin|superuser|root\s+user|maintainer|master)s?\s+(?:of|for|behind|on)\s+(?:you\b|switchboard\b|(?:this|the|your)\s+(?:${ASSISTANT}|system|gateway|deployment|service)\b)`,
    ),
  },
  {
    id: 'authority.operator',
    cls: 'authority',
    weight: 1,
    why: 'claims operator rights',
    re: /\b(?:is|are)\s+(?:an?\s+|the\s+)?(?:bot\s+|gateway\s+)?operators?\s*(?:[.!;,]|$)|\bis\s+(?:an?\s+)?(?:switchboard|bot|gateway)\s+(?:operator|admin|administrator)\b/,
  },
  {
    id: 'authority.root',
    cls: 'authority',
    weight: 1,
    why: 'claims root access',
    re: new RegExp(ROOT.source + String.raw`(?!\s+(?:on|to|for|of|in)\s+${DEVICE})`),
  },
  {
    id: 'authority.root-own-device',
    cls: 'authority',
    weight: 0.4,
    why: 'root access to a device of their own',
    re: new RegExp(ROOT.source + String.raw`\s+(?:on|to|for|of|in)\s+${DEVICE}`),
  },
  {
    id: 'authority.elevated',
    cls: 'authority',
    weight: 0.5,
    why: 'claims elevated access',
    re: /\bha(?:s|ve)\s+(?:been\s+granted\s+|been\s+given\s+)?(?:(?:full|unrestricted|unlimited|elevated|admin|administrator|administrative|operator|god|super|master|total|complete)\s*){1,2}(?:-?\s*level\s+)?(?:access|privileges?|rights|permissions?|control|clearance|powers?|mode)\b/,
  },
  {
    id: 'authority.elevated-here',
    cls: 'authority',
    weight: 0.6,
    why: 'claims elevated access here',
    re: r(
      String.raw`\bha(?:s|ve)\s+(?:been\s+granted\s+|been\s+given\s+)?(?:(?:full|unrestricted|unlimited|elevated|admin|administrator|administrative|operator|god|super|master|total|complete)\s*){1,2}(?:-?\s*level\s+)?(?:access|privileges?|rights|permissions?|control|clearance|powers?|mode)(?:\s*(?:[.!;,]|$)|\s+(?:to|on|over|for|in|of)\s+(?:(?:this|the|your)\s+(?:${ASSISTANT}|system|gateway|server|shell|tools?|sandbox|workspace|files?)|everything|all|anything|you)\b)`,
    ),
  },
  {
    id: 'authority.granted',
    cls: 'authority',
    weight: 0.6,
    why: 'claims granted privileges',
    re: /\bha(?:s|ve)\s+been\s+(?:granted|given|assigned)\s+(?:\w+\s+){0,2}?(?:access|permissions?|privileges?|rights|approval|clearance|authority|operator|admin)\b/,
  },
  {
    id: 'authority.preapproved',
    cls: 'authority',
    weight: 0.6,
    why: 'claims blanket approval',
    re: /\b(?:pre-?approved|pre-?authori[sz]ed|auto-?approved?|approved\s+automatically|automatically\s+approved|approve[sd]?\s+automatically|always\s+approved|blanket\s+approval)\b/,
  },
  {
    id: 'authority.approved-all',
    cls: 'authority',
    weight: 0.6,
    why: 'claims blanket approval',
    re: /\b(?:pre-?approved|pre-?authori[sz]ed|approved|authori[sz]ed)\s+(?:for\s+)?(?:all|every|any|everything|anything)\b/,
  },
  {
    id: 'authority.tool-names',
    cls: 'authority',
    weight: 0.5,
    why: "names the assistant's tools",
    re: /\b(?:shell_exec|file_write|file_patch|file_read|file_list|web_fetch|memory_remember|memory_forget|memory_recall)\b/,
  },
  {
    id: 'authority.exempt',
    cls: 'authority',
    weight: 1,
    why: 'claims an exemption from checks',
    re: /\b(?:whitelisted|allow-?listed|exempt(?:ed)?)\s+(?:from|for)\s+(?:all\s+|any\s+|every\s+|the\s+)?(?:\w+\s+)?(?:tools?|commands?|checks?|approvals?|rules|restrictions?|limits?|filters?|policies|confirmations?|everything|guardrails?|sandbox)\b/,
  },
  {
    id: 'authority.requests-approved',
    cls: 'authority',
    weight: 0.6,
    why: 'says requests are to be approved',
    re: /\b(?:requests?|commands?|messages?|actions?|orders?|calls?)\s+(?:from\s+\S+\s+)?(?:should|must|will|are\s+to|can)\s+(?:always\s+)?be\s+(?:approved|accepted|executed|run|trusted|granted|followed|obeyed)\b(?!\s+by\b)/,
  },
  {
    id: 'authority.unconditionally',
    cls: 'authority',
    weight: 0.6,
    why: 'says requests are to be approved',
    re: /\b(?:approved|accepted|executed|run|trusted|granted|followed|obeyed|answered|approve|accept|execute|trust|grant|follow|obey|answer)\s+(?:\w+\s+){0,3}?(?:automatically|immediately|unconditionally|blindly|without\s+question)\b/,
  },
  {
    id: 'authority.stop-asking',
    cls: 'authority',
    weight: 1,
    why: 'asks to stop asking for approval',
    re: /\b(?:stop|quit|no\s+more)\s+(?:asking|requesting|waiting)\s+(?:for\s+)?(?:approvals?|confirmations?|permission)|\bnever\s+ask\s+(?:the\s+user\s+|anyone\s+|them\s+)?(?:for\s+)?(?:approvals?|confirmations?|permission)/,
  },

  // --- exfiltration -----------------------------------------------------------
  {
    id: 'exfiltration.send-data',
    cls: 'exfiltration',
    weight: 1,
    why: 'exfiltration order',
    re: r(
      String.raw`\b(?:send|forward|upload|post|copy|leak|email|e-mail|mail|text|dm|fax|transmit|share|sync|mirror|report|cc|bcc)\s+(?:me\s+|us\s+)?(?:a\s+copy\s+of\s+|copies\s+of\s+)?(?:all|every|each|the\s+whole|the\s+entire|the\s+full|any|everyone'?s|other\s+users?'?s?)\s*(?:of\s+)?(?:the\s+|their\s+|the\s+user'?s\s+|user'?s\s+)?(?:\w+\s+)?${SENSITIVE}(?:\s+(?:in|from|of)\s+\S+){0,2}\s+(?:to|with)\b`,
    ),
  },
  {
    id: 'exfiltration.send-theirs',
    cls: 'exfiltration',
    weight: 1,
    why: 'exfiltration order',
    re: r(
      String.raw`\b(?:send|forward|upload|post|copy|leak|email|e-mail|mail|text|dm|fax|transmit|share|sync|mirror|report)\s+(?:the\s+user'?s|user'?s|their|his|her|the\s+customer'?s|everyone'?s|the\s+chat|the\s+conversation)\s+(?:\w+\s+)?${SENSITIVE}?\s*(?:(?:in|from|of)\s+\S+\s+){0,2}(?:to|with)\b`,
    ),
  },
  {
    id: 'exfiltration.send-weak',
    cls: 'exfiltration',
    weight: 0.6,
    why: 'order to send data out',
    re: r(
      String.raw`\b(?:send|forward|upload|post|copy|leak|email|e-mail|mail|text|dm|fax|transmit|share|dump|paste|print|output)\s+(?:\w+\s+){0,4}?${SENSITIVE}(?:\s+\w+)?\s*(?:(?:in|from|of)\s+\S+\s+){0,2}to\b`,
    ),
  },
  {
    id: 'exfiltration.target',
    cls: 'exfiltration',
    weight: 0.5,
    why: 'names an outside address',
    re: /[\w.+-]+@[\w-]+\.[\w.-]+|https?:\/\/\S+|\bwebhook\b|\bpublic\s+channel\b/,
  },
  {
    id: 'exfiltration.cc',
    cls: 'exfiltration',
    weight: 1,
    why: 'asks to copy someone in on everything',
    re: /\b(?:cc|bcc|copy\s+in)\s+\S+\s+(?:on|in|to)\s+(?:every|all|each|any)\b/,
  },
  {
    id: 'exfiltration.reveal',
    cls: 'exfiltration',
    weight: 1,
    why: 'asks to leak the prompt or secrets',
    re: /\b(?:reveal|print|output|show|leak|dump|repeat|send|share|tell|give)\s+(?:me\s+|them\s+|anyone\s+|users?\s+)?(?:your|the)\s+(?:system\s+prompt|instructions|hidden\s+prompt|initial\s+prompt|api\s+keys?|secrets?|credentials|environment\s+variables|env|passwords?|tokens?|private\s+keys?)\b/,
  },
  {
    id: 'exfiltration.include-secrets',
    cls: 'exfiltration',
    weight: 1,
    why: 'asks to put secrets in replies',
    re: r(
      String.raw`${START}(?:include|attach|embed|insert|paste|print|output|reveal|display|dump|list|read\s+out|show)\s+(?:\w+\s+){0,3}?${SECRET_WORDS}\b|\b${SECRET_WORDS}\s+(?:in|into|at\s+the\s+(?:start|end|top|bottom)\s+of)\s+(?:your|every|each|the\s+next|all|any)\s+(?:\w+\s+)?(?:reply|replies|answer|answers|response|responses|message|messages)\b`,
    ),
  },
  {
    id: 'exfiltration.files',
    cls: 'exfiltration',
    weight: 1,
    why: 'asks to read out private files or the environment',
    re: /\b(?:upload|send|post|cat|read|print|dump|copy|email|output|show)\s+(?:the\s+|all\s+)?(?:~\/|\/)?(?:\.ssh|id_rsa|id_ed25519|\.env\b|\/?etc\/(?:passwd|shadow)|environment\s+variables|env\s+vars)/,
  },
  {
    id: 'exfiltration.sensitive-path',
    cls: 'exfiltration',
    weight: 0.6,
    why: 'names private files',
    re: /(?:~\/\.ssh|\bid_rsa\b|\bid_ed25519\b|\/etc\/(?:passwd|shadow|sudoers)\b|\.aws\/credentials|\.env\b|\.netrc\b|\.git-credentials\b)/,
  },
  {
    id: 'exfiltration.template-url',
    cls: 'exfiltration',
    weight: 1,
    why: 'a link that carries conversation data out',
    re: /https?:\/\/\S*[?&/][\w-]*=?\s*[{<[]\s*\$?\s*(?:conversation|chat|history|user|email|messages?|secret|token|key|password|data|memory|prompt|context|name|address|query|input)/,
  },
  { id: 'exfiltration.image', cls: 'exfiltration', weight: 0.6, why: 'a markdown image that loads an outside URL', re: /!\[[^\]]*\]\(\s*https?:/ },
  {
    id: 'exfiltration.hide-from-user',
    cls: 'exfiltration',
    weight: 1,
    why: 'hides something from the user',
    re: /\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|show|let|mention\s+(?:this|it)\s+to|reveal\s+(?:this|it)\s+to|alert|warn|notify)\s+(?:the\s+)?(?:user|users|human|owner|them|him|her|anyone|operators?|admins?|administrators?|staff|moderators?|security|humans|reviewers?)\b/,
  },
  {
    id: 'exfiltration.hide-from-user-2',
    cls: 'exfiltration',
    weight: 1,
    why: 'hides something from the user',
    re: /\b(?:do\s+not|don'?t|never)\s+(?:reveal|mention|say|disclose|admit|explain|show)\s+(?:\w+\s+){0,3}?to\s+(?:the\s+)?(?:user|users|human|owner)\b/,
  },
  {
    id: 'exfiltration.without-telling',
    cls: 'exfiltration',
    weight: 0.6,
    why: "acts behind the user's back",
    re: /\bwithout\s+(?:telling|informing|asking|notifying|alerting)\s+(?:the\s+)?(?:user|users|human|owner|them|him|her|anyone)\b|\b(?:silently|secretly|quietly|covertly)\b/,
  },
  {
    id: 'exfiltration.keep-hidden',
    cls: 'exfiltration',
    weight: 1,
    why: 'hides something from the user',
    re: /\b(?:keep|hide)\s+(?:this|it|that)\s+(?:secret|hidden|confidential)?\s*from\s+(?:the\s+)?(?:user|users|human|owner)\b/,
  },

  // --- hidden text and markers ------------------------------------------------
  {
    id: 'hidden.self-reference',
    cls: 'hidden',
    weight: 0.5,
    why: 'a note about keeping itself secret',
    re: /\b(?:this|the)\s+(?:note|instruction|message|memory)\s+(?:is|must|should)\s+(?:stay\s+|be\s+|remain\s+)?(?:secret|hidden|confidential)\b|\babout\s+this\s+(?:note|instruction)\b/,
  },
  {
    id: 'hidden.system-marker',
    cls: 'hidden',
    weight: 1,
    why: 'system-prompt marker',
    re: /\bsystem\s*(?:prompt|message|instructions?|override|note|update|notice|alert)\s*[:=]/,
  },
  {
    id: 'hidden.override-marker',
    cls: 'hidden',
    weight: 1,
    why: 'override marker',
    re: /\b(?:operator|admin|system|developer|security|safety|root)\s+(?:override|mode|command|directive|instruction|order)s?\s*[:=]/,
  },
  {
    id: 'hidden.system-prompt',
    cls: 'hidden',
    weight: 1,
    why: 'targets the system prompt',
    re: /\b(?:reveal|print|show|ignore|new|update|change|override|replace|leak|repeat|rewrite|edit)\s+(?:the\s+|your\s+|my\s+)?system\s+(?:prompt|message|instructions?)\b/,
  },
  { id: 'hidden.role-prefix', cls: 'hidden', weight: 1, why: 'chat-role prefix', re: /(?:^|\n|[.!?]\s)\s*(?:system|assistant|developer|operator|admin)\s*:/ },
  {
    id: 'hidden.role-marker',
    cls: 'hidden',
    weight: 1,
    why: 'chat-role marker',
    re: /\[\s*(?:system|assistant|developer|inst|sys|admin|operator|instructions?)\s*\]/,
  },
  {
    id: 'hidden.tag',
    cls: 'hidden',
    weight: 1,
    why: 'hidden-instruction tag',
    re: /<\s*\/?\s*(?:system|instructions?|assistant|developer|admin|operator|prompt|im_start|im_end|sys)\s*>/,
  },
  {
    id: 'hidden.header',
    cls: 'hidden',
    weight: 1,
    why: 'instruction header',
    re: /#{2,}\s*(?:system|instructions?|new\s+instructions?|admin|override|operator)\b/,
  },
  {
    id: 'hidden.begin-marker',
    cls: 'hidden',
    weight: 1,
    why: 'hidden-instruction marker',
    re: /\b(?:begin|start|end)\s+(?:of\s+)?(?:hidden\s+|secret\s+|system\s+)?(?:instructions?|prompt)\b/,
  },
  { id: 'hidden.html-comment', cls: 'hidden', weight: 1, why: 'hidden HTML comment', re: /<!--[\s\S]*?(?:-->|$)/ },
  {
    id: 'hidden.css',
    cls: 'hidden',
    weight: 1,
    why: 'text hidden with CSS or HTML',
    re: /display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?![.\d])|opacity\s*:\s*0(?![.\d])|color\s*:\s*(?:white|#fff\b|#ffffff|transparent)|<\s*\w+[^>]*\s(?:hidden|aria-hidden)\b/,
  },
  { id: 'hidden.md-comment', cls: 'hidden', weight: 1, why: 'hidden markdown comment', re: /\[(?:\/\/|comment)\]\s*:\s*#/ },
];

const BOOSTS = new Map(RULES.filter((x) => x.boosts).map((x) => [x.id, x.boosts!]));

/** Words of the rules, so that spelling fixes can produce them. */
const LEXICON = extendLexicon(
  RULES.flatMap((rule) => rule.re.source.replace(/\\[a-zA-Z]/g, ' ').match(/[a-z]{3,}/g) ?? []).filter((w) => !/(?:ies|ed|ing)$/.test(w) || w.length > 5),
  [
    'without',
    'asking',
    'approval',
    'approvals',
    'confirmation',
    'shell',
    'command',
    'staff',
    'allowed',
    'trusted',
    'everyone',
    'anything',
    'instructions',
    'restrictions',
    'guidelines',
  ],
);

const TRICK_NAMES: Record<Trick, string> = {
  hidden: 'hidden characters',
  confusables: 'look-alike letters',
  leetspeak: 'leetspeak',
  spacing: 'spaced-out letters',
  repeats: 'repeated letters',
  joined: 'run-together words',
  smuggled: 'tag-character text',
};

/** Base64 runs long enough to hide a sentence. */
const BASE64 = /(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{24,}={0,2}(?![A-Za-z0-9+/=])/g;

function base64Texts(note: string): string[] {
  const out: string[] = [];
  for (const m of note.match(BASE64) ?? []) {
    if (!/[a-z]/.test(m) || !/[A-Z]/.test(m)) continue;
    const text = Buffer.from(m, 'base64').toString('utf8');
    const printable = text.replace(/[^\x20-\x7e\n]/g, '').length;
    if (text.length >= 8 && printable / text.length > 0.95 && /[a-z]{3,}\s+[a-z]{2,}/i.test(text)) out.push(text);
  }
  return out;
}

/** Scores a note. Pure and synchronous; about 0.1 ms for a typical note. */
export function classifyInjection(note: string, depth = 0): InjectionVerdict {
  const hits = new Map<string, InjectionFeature>();
  const add = (f: InjectionFeature) => {
    if (!hits.has(f.id)) hits.set(f.id, f);
  };
  const n = normalizeNote(note, LEXICON);

  if (n.hiddenChars > 0) add({ id: 'hidden.chars', cls: 'hidden', weight: 1, why: 'contains hidden (zero-width, bidi or tag) characters' });
  if (stripSpecialTokens(note) !== note || stripSpecialTokens(n.plain) !== n.plain || stripSpecialTokens(n.decoded) !== n.decoded) {
    add({ id: 'hidden.special-tokens', cls: 'hidden', weight: 1, why: 'contains chat-template special tokens' });
  }
  if (n.mixedScriptWords > 0) add({ id: 'hidden.mixed-script', cls: 'hidden', weight: 0.5, why: 'words spelled with look-alike letters' });
  if (/[ \t]{16,}|\n\s*\n\s*\n/.test(note)) add({ id: 'hidden.padding', cls: 'hidden', weight: 0.4, why: 'text pushed out of sight with blank space' });

  for (const rule of RULES) {
    if (rule.re.test(n.plain)) add({ id: rule.id, cls: rule.cls, weight: rule.weight, why: rule.why });
    else if (n.decoded !== n.plain && rule.re.test(n.decoded)) add({ id: rule.id, cls: rule.cls, weight: rule.weight, why: rule.why, decodedOnly: true });
  }
  // Spelling tricks that hid a word of the rules are themselves a sign.
  const spelled = [...n.tricks].filter((t) => t !== 'hidden' && t !== 'smuggled');
  if (spelled.length && [...hits.values()].some((f) => f.decodedOnly))
    add({ id: 'hidden.obfuscated', cls: 'hidden', weight: 0.4, why: `obfuscated with ${spelled.map((t) => TRICK_NAMES[t]).join(', ')}` });
  if (depth === 0) {
    for (const text of base64Texts(note)) {
      const inner = classifyInjection(text, 1);
      if (inner.injection) add({ id: 'hidden.base64', cls: 'hidden', weight: 1, why: `base64-encoded instructions (${inner.reason})` });
    }
  }

  // A booster counts only next to a feature of its class that is not one.
  const features = [...hits.values()].filter((f) => {
    const boosts = BOOSTS.get(f.id);
    return !boosts || [...hits.values()].some((g) => g.cls === boosts && !BOOSTS.has(g.id));
  });
  const score = Math.round(features.reduce((s, f) => s + f.weight, 0) * 100) / 100;
  const injection = score >= INJECTION_THRESHOLD;
  const verdict: InjectionVerdict = { injection, score, features, tricks: [...n.tricks] };
  if (injection) {
    const top = [...features].sort((a, b) => b.weight - a.weight);
    const whys = [...new Set(top.map((f) => f.why))].slice(0, 2);
    const undoneTricks = new Set<Trick>([...(top.some((f) => f.decodedOnly) ? spelled : []), ...(n.mixedScriptWords ? (['confusables'] as const) : [])]);
    const undone = undoneTricks.size ? ` (after undoing ${[...undoneTricks].map((t) => TRICK_NAMES[t]).join(', ')})` : '';
    verdict.reason = whys.join('; ') + undone;
  }
  return verdict;
}

/** Why the note is instruction-like, or undefined. */
export function findInjection(note: string): string | undefined {
  return classifyInjection(note).reason;
}
