/**
 * A classic-BPF seccomp filter for bwrap's `--seccomp FD`: the kernel keyring
 * calls (add_key, request_key, keyctl) fail with EPERM. The keyring of a user
 * id outlives its processes and is shared by every sandbox of that user, so a
 * command could leave data there for another conversation to read. Docker's
 * default profile denies the same calls.
 *
 * Only for the architectures whose syscall numbers are listed; elsewhere no
 * filter is returned (documented in the README).
 */

// struct seccomp_data: int nr (offset 0), u32 arch (offset 4).
const LD_W_ABS = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RET_K = 0x06; // BPF_RET | BPF_K
const RET_ALLOW = 0x7fff0000;
const RET_KILL_PROCESS = 0x80000000;
const RET_EPERM = 0x00050000 | 1;
const X32_SYSCALL_BIT = 0x40000000;

const ARCHES: Record<string, { audit: number; denied: number[]; x32: boolean }> = {
  // add_key, request_key, keyctl
  x64: { audit: 0xc000003e, denied: [248, 249, 250], x32: true },
  arm64: { audit: 0xc00000b7, denied: [217, 218, 219], x32: false },
};

type Insn = [code: number, jt: number, jf: number, k: number];

/** The compiled filter for this machine, or null where it does not know the syscall numbers. */
export function keyringFilter(arch: string = process.arch): Buffer | null {
  const a = ARCHES[arch];
  if (!a) return null;
  const prog: Insn[] = [
    [LD_W_ABS, 0, 0, 4],
    [JEQ_K, 1, 0, a.audit],
    [RET_K, 0, 0, RET_KILL_PROCESS], // another ABI (i386 on x86_64): not what we filtered for
    [LD_W_ABS, 0, 0, 0],
  ];
  const tests: Array<[number, number]> = [
    ...(a.x32 ? [[JGE_K, X32_SYSCALL_BIT] as [number, number]] : []),
    ...a.denied.map((nr) => [JEQ_K, nr] as [number, number]),
  ];
  // Each test jumps to the EPERM return, which follows the ALLOW after the last test.
  tests.forEach(([code, k], i) => prog.push([code, tests.length - i, 0, k]));
  prog.push([RET_K, 0, 0, RET_ALLOW], [RET_K, 0, 0, RET_EPERM]);
  const buf = Buffer.alloc(prog.length * 8);
  prog.forEach(([code, jt, jf, k], i) => {
    buf.writeUInt16LE(code, i * 8);
    buf.writeUInt8(jt, i * 8 + 2);
    buf.writeUInt8(jf, i * 8 + 3);
    buf.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return buf;
}
