import { z } from 'zod';
import { doctorFromEnv, formatDoctor } from '../doctor.js';

/** `switchboard doctor [--probe] [--json]`: exit 0 when every check passes, 1 otherwise. */
export async function runDoctor(opts: { json: boolean; probe: boolean }, out: NodeJS.WritableStream = process.stdout): Promise<number> {
  // Each schema is used once in this process: zod's JIT (it compiles a parser per object schema on its
  // first use) costs more than it saves here. Doctor is its own process; the gateway keeps the JIT.
  z.config({ jitless: true });
  const r = await doctorFromEnv(process.env, { probe: opts.probe });
  out.write(opts.json ? JSON.stringify(r, null, 2) + '\n' : formatDoctor(r) + '\n');
  return r.ok ? 0 : 1;
}
