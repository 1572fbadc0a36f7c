/**
 * What `switchboard init` asks and prints for one channel: the channel's own knowledge of its
 * platform (a Slack app manifest, a Discord invite URL, the Twilio webhook URLs...), kept in the
 * channel's folder as `setup.ts`. A setup module imports no platform SDK: init loads it alone.
 */

/** One question init asks (interactively), also answered by the flag `--<flag>`. */
export interface SetupQuestion {
  flag: string;
  prompt: string;
  default?: string;
  /** init with --yes refuses to go on without it. */
  required?: boolean;
  /** Why a (non-empty) answer is refused, or undefined when it is fine. */
  validate?(value: string): string | undefined;
}

/** A secret the channel reads from the environment: init writes `NAME=` into `.env` for the operator to fill. */
export interface SetupSecret {
  name: string;
  hint: string;
}

/** A live check of what the answers name (a host reachable...), run by init unless --no-probe. */
export interface SetupCheck {
  name: string;
  ok: boolean;
  message: string;
}

export interface ChannelSetup {
  questions: SetupQuestion[];
  /** The `channels.<name>` section the answers make. */
  config(answers: Record<string, string>): Record<string, unknown>;
  secrets(answers: Record<string, string>): SetupSecret[];
  /** Step by step on the platform, from an empty account to a first answered message, with the generated artefacts. */
  guide(answers: Record<string, string>): string;
  check?(answers: Record<string, string>): Promise<SetupCheck[]>;
  /** The operator's id as the channel's sender ids read (WhatsApp: `+1555…` → `whatsapp:+1555…`); default: as typed. */
  operatorId?(typed: string): string;
}
