import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { SwitchboardError } from '../../kernel/errors.js';
import type { TraceEntry } from '../../moat/honesty.js';

export const MOAT_USAGE = `usage: switchboard moat <verb> [--json]

verbs:
  classify "<command>"                     tier a shell command: safe | caution | dangerous | blocked
  check-url <url> [--resolve host:address]  SSRF check; --resolve answers DNS for a host (repeatable), offline
  scan [file|-] [--contact] [--no-pii]     find secrets and PII; print the redacted text
  claims                                   read {"text","trace"} JSON on stdin; check claims of action

exit status: 0 allowed / no findings / safe, 1 otherwise, 2 bad usage`;

class UsageError extends SwitchboardError {
  readonly code = 'usage';
}

/** `switchboard moat …`: each guard on its own, for debugging policies and feeding corpora. Each verb imports only its guard. */
export async function runMoat(argv: string[], io = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin }): Promise<number> {
  const [verb, ...rest] = argv;
  if (verb === '--help' || verb === '-h' || verb === 'help') {
    io.stdout.write(MOAT_USAGE + '\n');
    return 0;
  }
  try {
    switch (verb) {
      case 'classify': {
        const { values, positionals } = parse(rest);
        if (positionals.length !== 1) throw new UsageError('classify takes one command (quote it)');
        const { classifyCommand } = await import('../../moat/command-classifier.js');
        const r = classifyCommand(positionals[0]!);
        io.stdout.write(
          values.json ? JSON.stringify({ tier: r.tier, reasons: r.reasons }) + '\n' : `${r.tier}${r.reasons.length ? `: ${r.reasons.join('; ')}` : ''}\n`,
        );
        return r.tier === 'safe' ? 0 : 1;
      }
      case 'check-url': {
        const { values, positionals } = parse(rest);
        if (positionals.length !== 1) throw new UsageError('check-url takes one URL');
        const pairs = (values.resolve as string[] | undefined) ?? [];
        for (const p of pairs) if (!/^[^:]+:.+$/.test(p)) throw new UsageError(`--resolve takes host:address, got "${p}"`);
        const { checkUrl, staticResolver } = await import('../../moat/ssrf.js');
        const r = await checkUrl(positionals[0]!, pairs.length ? { resolve: staticResolver(pairs) } : {});
        const out = { allowed: r.allowed, reason: r.reason, address: r.address ?? null };
        io.stdout.write(values.json ? JSON.stringify(out) + '\n' : `${r.allowed ? 'allowed' : 'refused'}: ${r.reason}${r.address ? ` (${r.address})` : ''}\n`);
        return r.allowed ? 0 : 1;
      }
      case 'scan': {
        const { values, positionals } = parse(rest);
        if (positionals.length > 1) throw new UsageError('scan takes at most one file (or - for stdin)');
        const src = positionals[0] ?? '-';
        const text = src === '-' ? await readStdin(io.stdin) : readFileSync(src, 'utf8');
        const { scanAndRedact } = await import('../../moat/secrets.js');
        const r = scanAndRedact(text, { contact: values.contact === true, pii: values['no-pii'] !== true });
        const findings = r.findings.map((f) => ({ kind: f.kind, start: f.start, end: f.end }));
        io.stdout.write(
          values.json
            ? JSON.stringify({ findings, redacted: r.redacted }) + '\n'
            : `${findings.length} finding(s)${findings.map((f) => `\n  ${f.kind} at ${f.start}-${f.end}`).join('')}\n\n${r.redacted}\n`,
        );
        return findings.length ? 1 : 0;
      }
      case 'claims': {
        const { values, positionals } = parse(rest);
        if (positionals.length) throw new UsageError('claims reads its input on stdin');
        let input: { text?: unknown; trace?: unknown };
        try {
          input = JSON.parse(await readStdin(io.stdin)) as typeof input;
        } catch {
          throw new UsageError('claims expects JSON {"text": "...", "trace": [...]} on stdin');
        }
        if (typeof input.text !== 'string' || !Array.isArray(input.trace)) throw new UsageError('claims expects JSON {"text": "...", "trace": [...]} on stdin');
        const { checkClaims } = await import('../../moat/honesty.js');
        const r = checkClaims(input.text, input.trace as TraceEntry[]);
        // findings and text are the contract; undecided (claims only a judge could settle) is extra.
        io.stdout.write(
          values.json
            ? JSON.stringify({ findings: r.findings, text: r.text, ...(r.undecided ? { undecided: r.undecided } : {}) }) + '\n'
            : `${r.findings.length} finding(s)${r.findings.map((f) => `\n  ${f.verdict}: ${f.sentence} (${f.reason})`).join('')}${(r.undecided ?? []).map((u) => `\n  undecided: ${u.claim} (${u.reason})`).join('')}\n\n${r.text}\n`,
        );
        return r.findings.length ? 1 : 0;
      }
      default:
        throw new UsageError(verb ? `unknown moat verb: ${verb}` : 'a moat verb is required');
    }
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      io.stderr.write(`switchboard moat: ${(err as Error).message}\n${MOAT_USAGE}\n`);
      return 2;
    }
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      io.stderr.write(`switchboard moat: ${(err as Error).message}\n`);
      return 2;
    }
    throw err;
  }
}

const OPTIONS = {
  json: { type: 'boolean' },
  resolve: { type: 'string', multiple: true },
  contact: { type: 'boolean' },
  'no-pii': { type: 'boolean' },
} as const;

/** One option set for every verb; each verb reads the options it knows. */
function parse(args: string[]) {
  return parseArgs({ args, allowPositionals: true, options: OPTIONS });
}

async function readStdin(stdin: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stdin) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c as string));
  return Buffer.concat(chunks).toString('utf8');
}
