// In the VM: does an IPVS NEW_DEST get slower as the kernel's dest trash grows? A deleted real
// server stays in the netns's trash for a minute or two, and every add walks the whole trash
// first (ip_vs_trash_get_dest), so endpoint churn, whose drained real servers are deleted at the
// churn's rate, slows every later add. kube-proxy deletes them the same way and pays the same.
// SERVICES virtual servers; each round times SERVICES adds (one per virtual server) and their
// deletes, then grows the trash by 4 x SERVICES more add+delete pairs. Flushes the table first
// and last: run it in a throw-away VM (scripts/vm/run.sh -- node dist/scripts/bench/dest-trash.js).
// Usage: node dist/scripts/bench/dest-trash.js [SERVICES] [ROUNDS]
import { openIpvs } from '../../lib/kernel/ipvs/ipvs-netlink';
import { IpvsOp } from '../../lib/kernel/ipvs/ipvs';
import { RealServerSpec, VirtualServerSpec } from '../../lib/model/ipvs';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';
import { IP_VS_CONN_F } from '../../lib/uapi/ip_vs';

const SERVICES = Number(process.argv[2] ?? 1000);
const ROUNDS = Number(process.argv[3] ?? 6);
const GROW = 4;

const octets = (n: number) => `${(n >> 8) & 255}.${n & 255}`;
const virtualServer = (i: number): VirtualServerSpec => ({
  af: AF_INET, protocol: IPPROTO_TCP, address: `10.96.${octets(i)}`, port: 80, fwmark: 0,
  scheduler: 'rr', flags: 0, timeout: 0, netmask: 0xffffffff, peName: '',
});
/** real server number `n`, never used twice */
const realServer = (n: number): RealServerSpec => ({
  af: AF_INET, address: `10.${100 + ((n >> 16) & 63)}.${octets(n)}`, port: 8080,
  fwdMethod: IP_VS_CONN_F.MASQ, weight: 1, uThreshold: 0, lThreshold: 0,
});

async function main(): Promise<void> {
  const ipvs = await openIpvs();
  await ipvs.apply({ kind: 'flush' });
  const vss = Array.from({ length: SERVICES }, (_, i) => virtualServer(i));
  await ipvs.run(vss.map((vs): IpvsOp => ({ kind: 'newService', vs })));
  let next = 0;
  /** one add per virtual server, then the deletes of those real servers */
  const pairs = () => {
    const adds: IpvsOp[] = [];
    const dels: IpvsOp[] = [];
    for (const vs of vss) {
      const rs = realServer(next++);
      adds.push({ kind: 'newDest', vs, rs });
      dels.push({ kind: 'delDest', vs, rs });
    }
    return { adds, dels };
  };
  const timed = async (ops: IpvsOp[]): Promise<number> => {
    const t = process.hrtime.bigint();
    const failed = (await ipvs.run(ops)).filter((r) => !r.ok).length;
    if (failed > 0) throw new Error(`${failed} of ${ops.length} ops failed`);
    return Number(process.hrtime.bigint() - t) / 1e3 / ops.length;
  };
  console.log(`\nIPVS adds against the kernel's dest trash: ${SERVICES} virtual servers, ${SERVICES} adds and deletes timed per round\n`);
  console.log(`${'deleted before'.padStart(14)}  ${'us per add'.padStart(10)}  ${'us per delete'.padStart(13)}  ${'add vs round 0'.padStart(14)}`);
  console.log('-'.repeat(57));
  let first = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const { adds, dels } = pairs();
    const add = await timed(adds);
    const del = await timed(dels);
    if (round === 0) first = add;
    console.log(`${String(round * (GROW + 1) * SERVICES).padStart(14)}  ${add.toFixed(0).padStart(10)}  ${del.toFixed(0).padStart(13)}  ${`${(add / first).toFixed(2)}x`.padStart(14)}`);
    for (let k = 0; k < GROW; k++) {
      const grow = pairs();
      await timed(grow.adds);
      await timed(grow.dels);
    }
  }
  await ipvs.apply({ kind: 'flush' });
  ipvs.close();
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
