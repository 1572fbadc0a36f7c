import { setFlagsFromString } from 'node:v8';

/**
 * The embedded default runs the gateway and PGlite in one process, whose resident memory issue
 * #24 bounds (300 MB after load). Under a sustained load V8 lets the old generation grow to several
 * times what survived its last full collection before collecting again, and keeps the pages: over
 * 3,000 turns at c=64 the process sat at 310–400 MB. Growth capped at 1.3× keeps it at 250–270 MB
 * with no throughput lost (bench/embedded.js, README The embedded default). V8 reads the flag at
 * each collection, so setting it at start works; only an embedded process sets it.
 */
export function boundHeapGrowth(): void {
  setFlagsFromString('--heap-growing-percent=30');
}
