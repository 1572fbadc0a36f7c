import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Answers, InitError, type Question } from '../init/answers.js';
import { ACCESS_POLICIES, type ChannelAnswers, PROVIDERS, type ProviderChoice, planInit } from '../init/plan.js';
import { probeProvider } from '../init/probe.js';
import { builtinChannels } from '../register-builtin-channels.js';
import { INIT_USAGE as USAGE } from './init-usage.js';

const DEFAULT_MODEL: Record<ProviderChoice, string | undefined> = {
  openai: 'gpt-4.1-mini',
  anthropic: 'claude-sonnet-4-5',
  'openai-compatible': undefined,
  none: undefined,
};

export interface InitIo {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream;
  env: Record<string, string | undefined>;
  cwd: string;
}

/** `switchboard init`: the setup wizard (see USAGE). */
export async function runInit(
  argv: string[],
  io: InitIo = { input: process.stdin, output: process.stdout, env: process.env, cwd: process.cwd() },
): Promise<number> {
  const setups = await builtinChannels().setups();
  const channelFlags = new Set(setups.flatMap((s) => s.setup.questions.map((q) => q.flag)));
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: false,
      strict: true,
      options: {
        yes: { type: 'boolean', short: 'y' },
        interactive: { type: 'boolean' },
        force: { type: 'boolean' },
        json: { type: 'boolean' },
        'no-probe': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        dir: { type: 'string' },
        provider: { type: 'string' },
        model: { type: 'string' },
        'base-url': { type: 'string' },
        'provider-key': { type: 'string' },
        channels: { type: 'string' },
        access: { type: 'string' },
        operator: { type: 'string', multiple: true },
        ...Object.fromEntries([...channelFlags].map((f) => [f, { type: 'string' as const }])),
      },
    });
  } catch (err) {
    process.stderr.write(`switchboard init: ${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const v = parsed.values as Record<string, string | boolean | string[] | undefined>;
  if (v.help) {
    io.output.write(`${USAGE}\n`);
    return 0;
  }
  const json = v.json === true;
  const interactive = v.yes !== true && (v.interactive === true || io.input.isTTY === true);
  if (v.yes !== true && !interactive) {
    process.stderr.write('switchboard init: it asks questions; run it in a terminal, or pass --yes with flags (switchboard init --help)\n');
    return 2;
  }
  const flags: Record<string, string> = {};
  for (const [k, val] of Object.entries(v)) if (typeof val === 'string') flags[k] = val;
  // Questions go to stderr under --json, so stdout stays one JSON document.
  const answers = new Answers(flags, { interactive, input: io.input, output: json ? process.stderr : io.output });
  try {
    const provider = (await answers.ask({
      flag: 'provider',
      prompt: `Model provider (${PROVIDERS.join(', ')})`,
      default: 'openai',
      choices: [...PROVIDERS],
    })) as ProviderChoice;
    const model =
      provider === 'none'
        ? ''
        : await answers.ask({ flag: 'model', prompt: 'Model id', ...(DEFAULT_MODEL[provider] ? { default: DEFAULT_MODEL[provider] } : { required: true }) });
    const baseUrl =
      provider === 'openai-compatible'
        ? await answers.ask({ flag: 'base-url', prompt: 'Base URL of the OpenAI-compatible server (…/v1)', required: true })
        : '';
    if (baseUrl && !/^https?:\/\/\S+$/.test(baseUrl)) throw new InitError(`--base-url: expected an http(s) URL, got "${baseUrl}"`);
    const keyVar = provider === 'anthropic' ? 'ANTHROPIC_API_KEY' : 'OPENAI_API_KEY';
    const key =
      provider === 'none' || io.env[keyVar] ? '' : await answers.ask({ flag: 'provider-key', prompt: `${keyVar} (blank: fill it in .env later)`, default: '' });

    const known = setups.map((s) => s.name);
    const chosen = (
      await answers.ask({ flag: 'channels', prompt: `Chat channels besides the HTTP API (comma-separated: ${known.join(', ')}; blank: none)`, default: '' })
    )
      .split(',')
      .map((c) => c.trim().toLowerCase())
      .filter(Boolean);
    for (const c of chosen) if (!known.includes(c)) throw new InitError(`--channels: unknown channel "${c}" (known: ${known.join(', ')})`);
    const access = chosen.length
      ? await answers.ask({
          flag: 'access',
          prompt:
            'Who may talk to the agent on those channels: pairing (an unknown sender gets a code an operator approves), allowlist (only listed ids; with none listed, nobody), open (anyone)',
          default: 'pairing',
          choices: [...ACCESS_POLICIES],
        })
      : 'pairing';
    const operatorFlags = operatorIds((v.operator as string[] | undefined) ?? [], known);
    const channels: ChannelAnswers[] = [];
    for (const name of [...new Set(chosen)]) {
      const setup = setups.find((s) => s.name === name)!.setup;
      const own: Record<string, string> = {};
      for (const q of setup.questions) own[q.flag] = await answers.ask(q satisfies Question);
      const operator =
        operatorFlags[name] ??
        (interactive
          ? await answers.ask({ flag: `operator-${name}`, prompt: `Your own ${name} id, to allow and make an operator (blank: later)`, default: '' })
          : '');
      const id = operator && setup.operatorId ? setup.operatorId(operator) : operator;
      channels.push({ name, setup, answers: own, ...(id ? { operator: id } : {}) });
    }
    answers.close();

    const dir = resolve(io.cwd, flags.dir ?? '.');
    const files = { config: join(dir, 'switchboard.yaml'), env: join(dir, '.env') };
    const there = Object.values(files).filter((f) => existsSync(f));
    if (there.length && v.force !== true) throw new InitError(`${there.join(' and ')} already exist${there.length === 1 ? 's' : ''}; --force overwrites`);
    const plan = planInit({
      provider: { provider, ...(model ? { model } : {}), ...(baseUrl ? { baseUrl } : {}), ...(key ? { key } : {}) },
      access,
      channels,
      processEnv: io.env,
    });
    mkdirSync(dir, { recursive: true });
    writeFileSync(files.config, plan.configYaml);
    writeFileSync(files.env, plan.envText, { mode: 0o600 });
    chmodSync(files.env, 0o600); // also when --force replaced a file with other rights

    const probe = v['no-probe'] === true || provider === 'none' ? undefined : await probeProvider({ ...io.env, ...plan.env, PATH: io.env.PATH ?? '' });
    const checks = v['no-probe'] === true ? [] : (await Promise.all(channels.map(async (c) => (c.setup.check ? c.setup.check(c.answers) : [])))).flat();
    const ok = probe?.ok !== false;
    if (json) {
      io.output.write(
        `${JSON.stringify(
          {
            ok,
            files,
            apiKey: plan.apiKey,
            operatorKey: plan.operatorKey,
            access,
            channels: channels.map((c) => c.name),
            toFill: plan.toFill.map((f) => f.name),
            ...(probe ? { probe } : {}),
            checks,
            guides: plan.guides,
          },
          null,
          2,
        )}\n`,
      );
    } else {
      io.output.write(summary({ files, plan, probe, checks, access, channels: channels.map((c) => c.name), dir, cwd: io.cwd }));
    }
    return ok ? 0 : 1;
  } catch (err) {
    answers.close();
    if (!(err instanceof InitError)) throw err;
    process.stderr.write(`switchboard init: ${err.message}\n`);
    return 2;
  }
}

/** --operator slack:U0123 (repeatable, or comma-separated). */
function operatorIds(values: string[], known: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of values.flatMap((x) => x.split(','))) {
    const m = /^([a-z]+):(.+)$/.exec(item.trim());
    if (!m || !known.includes(m[1]!)) throw new InitError(`--operator: expected CHANNEL:ID with a channel of ${known.join(', ')}, got "${item}"`);
    out[m[1]!] = m[2]!.trim();
  }
  return out;
}

function summary(s: {
  files: { config: string; env: string };
  plan: ReturnType<typeof planInit>;
  probe: Awaited<ReturnType<typeof probeProvider>> | undefined;
  checks: Array<{ name: string; ok: boolean; message: string }>;
  access: string;
  channels: string[];
  dir: string;
  cwd: string;
}): string {
  const out = [`wrote ${s.files.config}`, `wrote ${s.files.env} (mode 600: it holds the keys)`, ''];
  out.push(`API key (user):      ${s.plan.apiKey}`, `operator key:        ${s.plan.operatorKey}`, '');
  if (s.probe) out.push(s.probe.ok ? `provider: ok, answered in ${s.probe.ms} ms (${s.probe.slot})` : `provider: FAILED: ${s.probe.error}`);
  else out.push('provider: not probed');
  for (const c of s.checks) out.push(`${c.name}: ${c.ok ? 'ok' : 'FAILED'}: ${c.message}`);
  if (s.channels.length) {
    out.push(
      '',
      `access policy on ${s.channels.join(', ')}: ${s.access}` +
        (s.access === 'pairing' ? ' (an unknown sender gets a code; approve it with `switchboard access approve CODE`)' : '') +
        (s.access === 'allowlist' ? ' (only the ids in access.<channel>.allow are answered; with none, nobody is)' : '') +
        (s.access === 'open' ? ' (anyone who reaches the bot is answered)' : ''),
    );
    out.push("(without an access section a chat channel's default is an empty allowlist: it refuses every sender)");
  }
  if (s.plan.toFill.length) out.push('', `fill in ${s.files.env}:`, ...s.plan.toFill.map((f) => `  ${f.name}  ${f.hint}`));
  for (const g of s.plan.guides) out.push('', g.text);
  const cd = s.dir === s.cwd ? '' : `cd ${s.dir} && `;
  out.push(
    '',
    'next:',
    `  ${cd}switchboard doctor        # checks everything start checks`,
    `  ${cd}switchboard start`,
    `  curl -N http://127.0.0.1:8787/v1/chat/completions -H "Authorization: Bearer ${s.plan.apiKey}" \\`,
    `    -H 'Content-Type: application/json' -d '{"model":"default","stream":true,"messages":[{"role":"user","content":"hello"}]}'`,
    '',
  );
  return out.join('\n');
}
