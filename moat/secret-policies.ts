/**
 * The secret policies' names, apart from the scanner (moat/secrets.ts and its 65 KB of rules), so that
 * the configuration schema (moat/config.ts) names them without loading the rules: doctor and the CLI
 * verbs that only read the configuration stay light.
 */
export type SecretPolicy = 'redact' | 'block' | 'allow';
/** What a user's message that carries a secret gets (moat.secrets): redacted before the model sees it, or refused. */
export const MESSAGE_SECRET_POLICIES = ['redact', 'block'] as const satisfies readonly SecretPolicy[];
export type MessageSecretPolicy = (typeof MESSAGE_SECRET_POLICIES)[number];
