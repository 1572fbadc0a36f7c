import { doctorFromEnv, formatDoctor } from '../doctor.js';

/** `switchboard doctor [--probe] [--json]`: exit 0 when every check passes, 1 otherwise. */
export async function runDoctor(opts: { json: boolean; probe: boolean }, out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const r = await doctorFromEnv(process.env, { probe: opts.probe });
  out.write(opts.json ? JSON.stringify(r, null, 2) + '\n' : formatDoctor(r) + '\n');
  return r.ok ? 0 : 1;
}
