/**
 * The gateway's targets (issue #24), each a ratio to the floor measured in the same run:
 * machines differ by 2× and more, so absolute figures are not compared across runs.
 */
export interface TopologyFigures {
  label: string;
  /** At c=64: turns per second of the gateway and of the floor (the fake LLM direct). */
  perSec64?: { gateway: number; floor: number };
  /** At c=64, CPU ms per turn: every gateway process together, and the fake LLM. */
  cpu64?: { gateway: number; fakeLlm: number };
  redisCommands64?: number;
  pgTransactions64?: number;
  /** At c=1, time to first token p50 / p99 in ms, of the gateway and of the floor. */
  ttft1?: { p50: number; p99: number; floorP50: number; floorP99: number };
}

const mark = (ok: boolean) => (ok ? 'ok  ' : 'MISS');

/** One line per target: the figure, the target beside it, and whether it is met. */
export function targetLines(f: TopologyFigures): string[] {
  const out: string[] = [];
  const line = (ok: boolean, what: string, figure: string, target: string) =>
    out.push(`  ${mark(ok)} ${what.padEnd(38)} ${figure.padEnd(28)} target ${target}`);
  if (f.perSec64) {
    const share = f.perSec64.gateway / f.perSec64.floor;
    line(
      share >= 0.3,
      'throughput at c=64, % of the floor',
      `${(share * 100).toFixed(1)}% (${f.perSec64.gateway.toFixed(0)} / ${f.perSec64.floor.toFixed(0)})`,
      '>= 30%',
    );
  }
  if (f.cpu64) {
    const x = f.cpu64.gateway / f.cpu64.fakeLlm;
    line(x <= 4, 'gateway CPU per turn / fake LLM CPU', `${x.toFixed(1)}x (${f.cpu64.gateway.toFixed(2)} / ${f.cpu64.fakeLlm.toFixed(2)} ms)`, '<= 4x');
  }
  if (f.redisCommands64 !== undefined) line(f.redisCommands64 <= 25, 'Redis commands per turn at c=64', f.redisCommands64.toFixed(1), '<= 25 (57 before)');
  if (f.pgTransactions64 !== undefined) line(true, 'Postgres commits per turn at c=64', f.pgTransactions64.toFixed(1), 'none set (3 before; each synchronous)');
  if (f.ttft1) {
    const { p50, p99, floorP50, floorP99 } = f.ttft1;
    const added50 = p50 - floorP50;
    const added99 = p99 - floorP99;
    line(
      added50 <= 5 * floorP50,
      'added TTFT p50 at c=1',
      `${added50.toFixed(1)} ms (${(added50 / floorP50).toFixed(1)}x floor p50 ${floorP50.toFixed(1)})`,
      '<= 5x the floor p50',
    );
    line(added99 <= 10, 'added TTFT p99 at c=1', `${added99.toFixed(1)} ms (floor p99 ${floorP99.toFixed(1)})`, '<= 10 ms');
  }
  return out;
}
