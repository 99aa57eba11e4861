// Inside the QEMU VM only (Linux 6.1, iptables 1.8.9): the nf_tables ruleset generation read
// over NETLINK_NETFILTER moves once per committed nf_tables transaction and for nothing else
// (FakeIptables counts the same for the same input), and a real IptablesSync with the reader
// skips the periodic verify's saves while it has not moved, and reads and repairs once someone
// else changed our rules.
// Measured here (this file's network namespace; every step reads the generation before and after):
//   iptables-nft-restore of a nat+filter payload           +2 (each COMMIT is a transaction)
//   ... of a payload failing in its nat block              +0; failing in filter after nat: +1
//   iptables-nft-save (-t nat, -t filter, all)             +0
//   ipset create/add/del, ipvsadm -A/-D, iptables-legacy   +0 (not nf_tables)
//   iptables-nft -N / -X (and -F, -D, as the second test shows) by someone else: +1 each;
//   -F of an empty chain: +0 (a transaction with nothing in it commits nothing)
//   ip6tables-nft-restore of nat+filter                    +2 (one counter per namespace)
// Addresses: 10.244.0.0/16 pods, 192.0.2.0/24 and 203.0.113.0/24 (RFC 5737).
import { ChildProcessExec, checkExec } from '../../lib/kernel/exec';
import { CountingExec } from '../../testkit/counting-exec';
import { createIpset } from '../../lib/kernel/ipset/ipset-restore';
import { createIptables } from '../../lib/kernel/iptables/iptables-restore';
import { formatIptablesRestore } from '../../lib/kernel/iptables/format-restore';
import { restoreCommits } from '../../lib/kernel/iptables/iptables-sync';
import { NftGenerationNetlink, openNftGeneration } from '../../lib/kernel/iptables/nft-generation';
import { FakeIptables } from '../../testkit/kernel/fake-iptables';
import { planIptables } from '../../lib/plan/iptables';
import { planIpsets } from '../../lib/plan/ipsets';
import { SetKey } from '../../lib/model/names';

const exec0 = new ChildProcessExec();
const sh = async (script: string, stdin?: string) =>
  checkExec('bash', ['-c', script], await exec0.run('bash', ['-c', script], stdin)).stdout;
/** exit code of a script expected to fail */
const shFails = async (script: string, stdin?: string) => (await exec0.run('bash', ['-c', script], stdin)).exitCode;
const saveOf = async (bin: string, table: string) =>
  (await sh(`${bin} -t ${table}`))
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'))
    .join('\n') + '\n';

const LIVE: SetKey[] = ['LOOP_BACK', 'CLUSTER_IP', 'EXTERNAL_IP', 'LOAD_BALANCER', 'NODE_PORT_TCP'];
const PLAN = planIptables({
  family: 'ipv4',
  clusterCIDR: '10.244.0.0/16',
  nonEmptySets: new Set(LIVE),
  randomFully: true,
});
const RESTORE = 'iptables-nft-restore --noflush -w 5 -W 100000';
const OUTPUT_JUMP = '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES';

let gen: NftGenerationNetlink;

beforeAll(async () => {
  gen = openNftGeneration();
  // the sets the rules name (the kernel refuses rules on missing sets)
  const ipset = createIpset();
  await ipset.observe();
  await ipset.sync(planIpsets('ipv4', {}));
});
afterAll(() => gen.close());

/** how far the generation moved across `step` */
async function moves(step: () => Promise<unknown>): Promise<number> {
  const before = await gen.read();
  await step();
  return (await gen.read()) - before;
}

/** the fake, given the same restores as the kernel, must count the same */
const fake = new FakeIptables({ family: 'ipv4', flavor: 'nft' });
function fakeMoves(text: string): number {
  const before = fake.generation;
  try {
    fake.applyRestore(text, true);
  } catch {
    // refused as the kernel refuses it; what was committed before stays counted
  }
  return fake.generation - before;
}

describe('the nf_tables generation on this kernel', () => {
  it('moves once per committed table block of a restore, for every nf_tables commit by anyone, and for nothing else', async () => {
    const g = await gen.read();
    expect(g).toBeGreaterThan(0);
    expect(await gen.read()).toBe(g);

    const payload = formatIptablesRestore(PLAN);
    expect(restoreCommits(payload)).toBe(2);
    expect(await moves(() => sh(RESTORE, payload))).toBe(2);
    // the same text again: every chain is flushed and refilled, two real transactions
    expect(await moves(() => sh(RESTORE, payload))).toBe(2);
    expect([fakeMoves(payload), fakeMoves(payload)]).toEqual([2, 2]);
    expect(await moves(() => sh('iptables-nft-save -t nat; iptables-nft-save -t filter; iptables-nft-save'))).toBe(0);

    // a failing block is aborted; the blocks before it stay committed
    const failsInNat =
      '*nat\n:KUBE-T - [0:0]\n-A KUBE-T -j NO-SUCH-CHAIN\nCOMMIT\n*filter\n:KUBE-T - [0:0]\n-A KUBE-T -j RETURN\nCOMMIT\n';
    const failsInFilter =
      '*nat\n:KUBE-T - [0:0]\n-A KUBE-T -j RETURN\nCOMMIT\n*filter\n:KUBE-T - [0:0]\n-A KUBE-T -j NO-SUCH-CHAIN\nCOMMIT\n';
    expect(await moves(async () => expect(await shFails(RESTORE, failsInNat)).toBe(2))).toBe(0);
    expect(await moves(async () => expect(await shFails(RESTORE, failsInFilter)).toBe(2))).toBe(1);
    expect([fakeMoves(failsInNat), fakeMoves(failsInFilter)]).toEqual([0, 1]);

    // other subsystems and the legacy tables are not nf_tables
    expect(
      await moves(() =>
        sh(
          'ipset create T-GEN hash:ip && ipset destroy T-GEN && ipvsadm -A -t 203.0.113.10:80 -s rr && ipvsadm -D -t 203.0.113.10:80 && ' +
            'iptables-legacy -t filter -N T-GEN && iptables-legacy -t filter -X T-GEN',
        ),
      ),
    ).toBe(0);

    // someone else's iptables-nft command: one transaction each; one with nothing in it commits nothing
    expect(await moves(() => sh('iptables-nft -t filter -N T-GEN'))).toBe(1);
    expect(await moves(() => sh('iptables-nft -t filter -F T-GEN'))).toBe(0);
    expect(await moves(() => sh('iptables-nft -t filter -X T-GEN'))).toBe(1);
    expect(['-N T-GEN', '-F T-GEN', '-X T-GEN'].map((l) => fakeMoves(`*filter\n${l}\nCOMMIT\n`))).toEqual([1, 0, 1]);

    // one counter per network namespace: ip6tables-nft moves it too
    expect(
      await moves(() =>
        sh(
          'ip6tables-nft-restore --noflush -w 5',
          '*nat\n:KUBE-T6 - [0:0]\n-A KUBE-T6 -j RETURN\nCOMMIT\n*filter\n:KUBE-T6 - [0:0]\n-A KUBE-T6 -j RETURN\nCOMMIT\n',
        ),
      ),
    ).toBe(2);
  });
});

describe('IptablesSync (nft) with the generation', () => {
  it('a verify with nothing committed since runs nothing; a foreign flush, a deleted jump, a foreign chain are read, repaired, proven again', async () => {
    const exec = new CountingExec(exec0);
    const ipt = createIptables({ family: 'ipv4', backend: 'nft', exec, generation: gen });
    // first sync: reads the jumps (2 saves), writes (1 restore)
    expect(await ipt.sync(PLAN, { verify: true })).toMatchObject({ execs: 3, wrote: true });
    const nat = await saveOf('iptables-nft-save', 'nat');
    exec.reset();
    expect(await ipt.sync(PLAN, { verify: true })).toEqual({
      execs: 0,
      wrote: false,
      insertedJumps: [],
      restoreText: '',
      repaired: [],
    });
    expect(exec.count).toBe(0);

    await sh('iptables-nft -t nat -F KUBE-SERVICES');
    const r = await ipt.sync(PLAN, { verify: true });
    expect(r).toMatchObject({ execs: 3, wrote: true });
    expect(r.repaired).toEqual([expect.stringMatching(/^nat KUBE-SERVICES: 0 of [1-9]\d* rules$/)]);
    expect(exec.calls.map((c) => c.cmd)).toEqual(['iptables-nft-save', 'iptables-nft-save', 'iptables-nft-restore']);
    expect(await saveOf('iptables-nft-save', 'nat')).toBe(nat);
    exec.reset();
    expect(await ipt.sync(PLAN, { verify: true })).toMatchObject({ execs: 0 });
    expect(exec.count).toBe(0);

    await sh(`iptables-nft -t nat -D OUTPUT ${OUTPUT_JUMP}`);
    expect(await ipt.sync(PLAN, { verify: true })).toMatchObject({
      execs: 3,
      wrote: true,
      repaired: ['nat OUTPUT: jump to KUBE-SERVICES missing'],
    });
    expect(await saveOf('iptables-nft-save', 'nat')).toBe(nat);
    expect(await ipt.sync(PLAN, { verify: true })).toMatchObject({ execs: 0 });

    // a commit that leaves our rules alone: read once, nothing to repair, proven at the new generation
    await sh('iptables-nft -t filter -N FOREIGN');
    expect(await ipt.sync(PLAN, { verify: true })).toMatchObject({ execs: 2, wrote: false, repaired: [] });
    expect(await ipt.sync(PLAN, { verify: true })).toMatchObject({ execs: 0 });
  });
});
