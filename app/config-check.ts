import { slotsFromConfig } from '../providers/catalog.js';
import type { ProviderSlot } from '../providers/slot.js';
import type { ChannelInstance } from '../src/channel/index.js';
import { type Config, ConfigError, type ConfigProblem, configError, didYouMean, parseConfig } from '../src/config.js';
import { infraMode } from './infra-mode.js';
import { validateChannels } from './register-builtin-channels.js';

/**
 * Everything start checks before it opens anything, and doctor reports: the schema of every slice,
 * then the checks across slices (the store and queue URLs together, the provider slots, the slots
 * other slices name, the channels, the operator channel). Each check runs on the slices it needs when they are valid, so one wrong
 * slice does not hide the problems of another.
 */

/** A problem and the doctor check it belongs to (config, mode, provider, slots, channel <name>, approvals). */
export interface CheckedProblem extends ConfigProblem {
  check: string;
}

export interface SliceChecks {
  slots: ProviderSlot[];
  /** Why there is no provider, when none is configured (not a problem: the gateway answers with a notice). */
  reason?: string;
  channels: ChannelInstance[];
  problems: CheckedProblem[];
}

type Env = Record<string, string | undefined>;

/**
 * The checks across slices, on the slices that are valid: those present in `cfg` and not named `invalid`.
 * `parseOnly` (doctor): a channel that has a parser alone (the HTTP API) is parsed, not loaded; start loads every one.
 */
export async function checkSlices(
  cfg: Partial<Config>,
  env: Env,
  invalid: ReadonlyArray<keyof Config> = [],
  opts: { parseOnly?: boolean } = {},
): Promise<SliceChecks> {
  const problems: CheckedProblem[] = [];
  if (!invalid.includes('redisUrl') && !invalid.includes('databaseUrl')) {
    try {
      infraMode({ redisUrl: cfg.redisUrl, databaseUrl: cfg.databaseUrl });
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...err.problems.map((p) => ({ ...p, check: 'mode' })));
    }
  }
  let slots: ProviderSlot[] = [];
  let reason: string | undefined;
  let slotsKnown = false;
  if (cfg.provider && !invalid.includes('providers')) {
    const built = await slotsFromConfig({ provider: cfg.provider, providers: cfg.providers }, env);
    slots = built.slots;
    reason = built.reason;
    problems.push(...built.problems.map((p) => ({ ...p, check: 'provider' })));
    // The slot references are unknowable while the slots themselves are broken.
    slotsKnown = built.problems.length === 0;
  }
  if (slotsKnown) {
    const ids = slots.map((x) => x.id);
    const refs: Array<[string, string | undefined]> = [];
    if (cfg.compaction) refs.push(['compaction.summarizerSlot', cfg.compaction.summarizerSlot]);
    if (cfg.moat) refs.push(['moat.honesty.judgeSlot', cfg.moat.honesty.judgeSlot]);
    // Group-chat manners' ambient classifier, in any channel's groups section.
    for (const [name, raw] of Object.entries((cfg.channels ?? {}) as Record<string, unknown>)) {
      const slot = (raw as { groups?: { classifierSlot?: unknown } } | null)?.groups?.classifierSlot;
      if (typeof slot === 'string') refs.push([`channels.${name}.groups.classifierSlot`, slot]);
    }
    for (const [path, id] of refs) {
      if (!id || ids.includes(id)) continue;
      const suggestion = didYouMean(id, ids);
      const message = `no provider slot "${id}"${suggestion ? `: did you mean "${suggestion}"?` : ids.length ? ` (slots: ${ids.join(', ')})` : ''}`;
      problems.push({ check: 'slots', path, message, ...(suggestion ? { suggestion } : {}) });
    }
  }
  let channels: ChannelInstance[] = [];
  if (cfg.channels) {
    // The channels, through the parsers start calls (nothing connects).
    const validated = await validateChannels({ ...cfg, channels: cfg.channels } as Pick<Config, 'channels'> & Partial<Config>, env, opts);
    channels = validated.channels;
    for (const e of validated.errors) problems.push(...e.error.problems.map((p) => ({ ...p, check: `channel ${e.name}` })));
    const opCh = cfg.approvals?.operatorChannel;
    if (opCh && !validated.errors.some((e) => e.name === opCh.channel)) {
      const ch = channels.find((c) => c.name === opCh.channel);
      if (!ch?.deliverer?.notifyApproval) {
        const able = channels.filter((c) => c.deliverer?.notifyApproval).map((c) => c.name);
        const suggestion = ch ? undefined : didYouMean(opCh.channel, able.length ? able : ['slack', 'discord']);
        const message = `"${opCh.channel}" is not a configured channel that can post approval requests (slack, discord)${suggestion ? `: did you mean "${suggestion}"?` : ''}`;
        problems.push({ check: 'approvals', path: 'approvals.operatorChannel.channel', message, ...(suggestion ? { suggestion } : {}) });
      }
    }
    // Human takeover's operators' place (src/handoffs/): a channel that can post plain text to operators.
    const tkCh = cfg.takeover?.operatorChannel;
    if (tkCh && !validated.errors.some((e) => e.name === tkCh.channel)) {
      const ch = channels.find((c) => c.name === tkCh.channel);
      if (!ch?.deliverer?.notifyText) {
        const able = channels.filter((c) => c.deliverer?.notifyText).map((c) => c.name);
        const suggestion = ch ? undefined : didYouMean(tkCh.channel, able.length ? able : ['slack', 'discord', 'sms', 'whatsapp']);
        const message = `"${tkCh.channel}" is not a configured channel that can post to operators (slack, discord, sms, whatsapp)${suggestion ? `: did you mean "${suggestion}"?` : ''}`;
        problems.push({ check: 'takeover', path: 'takeover.operatorChannel.channel', message, ...(suggestion ? { suggestion } : {}) });
      }
    }
  }
  return { slots, ...(reason ? { reason } : {}), channels, problems };
}

/**
 * File + environment through the schema and the checks across slices: every problem at once
 * (`config` is set when the schema accepts the whole configuration, with or without other problems).
 */
export async function checkConfiguration(env: Env, opts: { parseOnly?: boolean } = {}): Promise<SliceChecks & { config?: Config }> {
  const parsed = parseConfig(env);
  const checks = await checkSlices(parsed.slices, env, parsed.invalid, opts);
  const problems = [...parsed.problems.map((p) => ({ ...p, check: 'config' })), ...checks.problems];
  return { ...checks, problems, ...(parsed.config ? { config: parsed.config } : {}) };
}

/** start's refusal: one ConfigError listing every problem. */
export async function loadCheckedConfig(env: Env): Promise<Config> {
  const { config, problems } = await checkConfiguration(env);
  if (problems.length || !config) throw configError(problems);
  return config;
}
