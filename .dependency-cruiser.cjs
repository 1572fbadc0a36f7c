// The layering of issue #20, checked by `npm run lint` (depcruise). The rules state the
// target; the violations the tree still has are listed in
// .dependency-cruiser-known-violations.json and ignored (--ignore-known), so only a NEW
// violation fails. Shrink that file as the redesign lands: `npm run lint:baseline`.
//
// Paths are relative to the repository root. Type-only imports count: TypeScript 7 has no
// JS compiler API dependency-cruiser can use, so sources are parsed with swc, which reports
// `import type` like any other import.

const OURS = '^(kernel|adapters|providers|moat|tools|src|channels|app)/';
// A package as it resolves: its own folder or its @types folder.
const pkg = (names) => `^node_modules/(@types/)?(${names})(/|$)`;
const DISCORD = 'discord\\.js|@discordjs/[^/]+';
const SLACK = '@slack/[^/]+';
const TWILIO = 'twilio';
const EMAIL = 'imapflow|nodemailer|mailparser';
const PLATFORM_SDKS = [DISCORD, SLACK, TWILIO, EMAIL].join('|');
const INFRA = 'ioredis|bullmq|pg|pg-[^/]+|@electric-sql/pglite';
// A port: adapters/<x>/port.ts or types.ts, or a file under adapters/<x>/ports/.
const PORT = '^adapters/[^/]+/((port|types)\\.ts$|ports/)';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycles, type-only imports included.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'Every import resolves (an unresolved import would slip past every other rule).',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: 'kernel-imports-nothing',
      comment: 'kernel/ is the bottom layer: it imports nothing of ours and no package, only node builtins.',
      severity: 'error',
      from: { path: '^kernel/' },
      to: { pathNot: '^kernel/', dependencyTypesNot: ['core'] },
    },
    {
      name: 'adapters-import-only-kernel',
      comment: 'adapters/ (Redis, BullMQ, Postgres, PGlite and their ports) build on kernel/ only.',
      severity: 'error',
      from: { path: '^adapters/' },
      to: { path: OURS, pathNot: '^(kernel|adapters)/' },
    },
    {
      name: 'providers-import-only-kernel',
      severity: 'error',
      from: { path: '^providers/' },
      to: { path: OURS, pathNot: '^(kernel|providers)/' },
    },
    {
      name: 'moat-imports-only-kernel',
      comment: 'The guards know nothing of the gateway, and nothing of the adapters either.',
      severity: 'error',
      from: { path: '^moat/' },
      to: { path: OURS, pathNot: '^(kernel|moat)/' },
    },
    {
      name: 'tools-import-kernel-moat-ports',
      comment: 'tools/ may use kernel/, moat/ and the adapter ports, not an implementation.',
      severity: 'error',
      from: { path: '^tools/' },
      to: { path: OURS, pathNot: `^(kernel|moat|tools)/|${PORT}` },
    },
    {
      name: 'core-not-to-app-or-channels',
      comment: 'src/ (core) never imports the composition root or a channel: channels plug in through src/channel/.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(app|channels)/' },
    },
    {
      name: 'core-to-adapter-ports-only',
      comment: 'src/ reaches storage, queues and the bus through the ports, app/ wires the implementations.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^adapters/', pathNot: PORT },
    },
    {
      name: 'channel-sdk-imports-no-platform-sdk',
      comment: 'src/channel/ (the channel SDK) is platform-neutral.',
      severity: 'error',
      from: { path: '^src/channel/' },
      to: { path: pkg(PLATFORM_SDKS) },
    },
    {
      name: 'channel-imports-only-sdk-and-kernel',
      comment: 'A channel (channels/<x>/) uses core only through the channel SDK (src/channel/) and kernel/.',
      severity: 'error',
      from: { path: '^channels/[^/]+/' },
      to: { path: OURS, pathNot: '^(kernel|src/channel|channels)/' },
    },
    {
      name: 'channel-not-to-other-channel',
      comment: "A channel's folder is its own: no channel imports another's (channels/twilio/ is what the Twilio channels share).",
      severity: 'error',
      from: { path: '^channels/([^/]+)/' },
      to: { path: '^channels/', pathNot: '^channels/($1|twilio)/' },
    },
    {
      name: 'nothing-imports-app',
      comment: 'app/ is the composition root: only app/ (and bin/, which runs its build) imports it.',
      severity: 'error',
      from: { pathNot: '^(app|bin)/' },
      to: { path: '^app/' },
    },
    {
      name: 'discord-sdk-only-in-channels-discord',
      severity: 'error',
      from: { pathNot: '^channels/discord/' },
      to: { path: pkg(DISCORD) },
    },
    {
      name: 'slack-sdk-only-in-channels-slack',
      severity: 'error',
      from: { pathNot: '^channels/slack/' },
      to: { path: pkg(SLACK) },
    },
    {
      name: 'twilio-only-in-channels-sms',
      severity: 'error',
      from: { pathNot: '^channels/(sms|whatsapp|twilio)/' },
      to: { path: pkg(TWILIO) },
    },
    {
      name: 'mail-packages-only-in-channels-email',
      severity: 'error',
      from: { pathNot: '^channels/email/' },
      to: { path: pkg(EMAIL) },
    },
    {
      name: 'infra-packages-only-in-adapters',
      comment: 'ioredis, bullmq, pg and PGlite are used by adapters/ (and app/infra.ts, which builds them) only.',
      severity: 'error',
      from: { pathNot: '^(adapters/|app/infra\\.ts$)' },
      to: { path: pkg(INFRA) },
    },
    {
      name: 'format-module-imports-no-core-or-sdk',
      comment: 'Formatting modules (channels/*/format.ts, markdown.ts, split.ts) are pure text: no core, no SDK.',
      severity: 'error',
      from: { path: '^channels/[^/]+/(format|markdown|split)\\.ts$' },
      to: { path: `^(src|app|adapters|providers|moat|tools)/|${pkg(PLATFORM_SDKS)}` },
    },
  ],
  options: {
    // The TypeScript sources of every layer; tests and the bench are harnesses, not layers.
    includeOnly: '^(kernel|adapters|providers|moat|tools|src|channels|app|node_modules)/',
    doNotFollow: { path: 'node_modules' },
    // node_modules may be a symlink (git worktrees): keep packages named node_modules/<name>/... so the
    // package rules match.
    preserveSymlinks: true,
    parser: 'swc',
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    skipAnalysisNotInRules: true,
    cache: false,
  },
};
