// In the VM: does an IPVS NEW_DEST get slower as the kernel's dest trash grows? A deleted real
// server stays in the netns's trash for a minute or two, and every add walks the whole trash
// first (ip_vs_trash_get_dest), so endpoint churn, whose drained real servers are deleted at the
// churn's rate, slows every later add. kube-proxy deletes them the same way and pays the same.
// SERVICES virtual servers; each round times SERVICES adds (one per virtual server) and their
// deletes, then grows the trash by 4 x SERVICES more add+delete pairs. Flushes the table first
// and last: run it in a throw-away VM (scripts/vm/run.sh -- node dist/scripts/bench/dest-trash.js).
// Then, against the trash those rounds left, real servers whose address goes away and returns
// (a readiness flap, a drain the address comes back to), one per virtual server, each pattern
// run twice, alternating: deleted and re-added (DEL_DEST, NEW_DEST: the add finds it in the trash
// and revives it) against set to weight 0 and back (SET_DEST twice: what the daemon does while
// the real server drains); while they are away, SERVICES adds of new addresses (and their
// deletes, untimed) walk the trash, which holds the away ones in the first pattern only.
// Last, a Service port change (its virtual server re-created under the new port with the same
// PORT_CHANGE_DESTS real servers), DEL_SERVICE of the old one before the adds (the partial sync's
// order until the deletes went last) or after them, each run in a network namespace of its own
// (the trash is per namespace: each starts empty), twice, alternating; us per NEW_DEST.
// Usage: node dist/scripts/bench/dest-trash.js [SERVICES] [ROUNDS] [PORT_CHANGE_DESTS]
//        node dist/scripts/bench/dest-trash.js port-changes - [PORT_CHANGE_DESTS]   (the last part alone)
import { spawnSync } from 'node:child_process';
import { openIpvs } from '../../lib/kernel/ipvs/ipvs-netlink';
import { IpvsOp } from '../../lib/kernel/ipvs/ipvs';
import { RealServerSpec, VirtualServerSpec } from '../../lib/model/ipvs';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';
import { IP_VS_CONN_F } from '../../lib/uapi/ip_vs';

const SERVICES = Number(process.argv[2] ?? 1000);
const ROUNDS = Number(process.argv[3] ?? 6);
const PORT_CHANGE_DESTS = Number(process.argv[4] ?? 5000);
const GROW = 4;

const octets = (n: number) => `${(n >> 8) & 255}.${n & 255}`;
const virtualServer = (i: number): VirtualServerSpec => ({
  af: AF_INET,
  protocol: IPPROTO_TCP,
  address: `10.96.${octets(i)}`,
  port: 80,
  fwmark: 0,
  scheduler: 'rr',
  flags: 0,
  timeout: 0,
  netmask: 0xffffffff,
  peName: '',
});
/** real server number `n`, never used twice */
const realServer = (n: number): RealServerSpec => ({
  af: AF_INET,
  address: `10.${100 + ((n >> 16) & 63)}.${octets(n)}`,
  port: 8080,
  fwdMethod: IP_VS_CONN_F.MASQ,
  weight: 1,
  uThreshold: 0,
  lThreshold: 0,
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
  console.log(
    `\nIPVS adds against the kernel's dest trash: ${SERVICES} virtual servers, ${SERVICES} adds and deletes timed per round\n`,
  );
  console.log(
    `${'deleted before'.padStart(14)}  ${'us per add'.padStart(10)}  ${'us per delete'.padStart(13)}  ${'add vs round 0'.padStart(14)}`,
  );
  console.log('-'.repeat(57));
  let first = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const { adds, dels } = pairs();
    const add = await timed(adds);
    const del = await timed(dels);
    if (round === 0) first = add;
    console.log(
      `${String(round * (GROW + 1) * SERVICES).padStart(14)}  ${add.toFixed(0).padStart(10)}  ${del.toFixed(0).padStart(13)}  ${`${(add / first).toFixed(2)}x`.padStart(14)}`,
    );
    for (let k = 0; k < GROW; k++) {
      const grow = pairs();
      await timed(grow.adds);
      await timed(grow.dels);
    }
  }
  await returning(vss, timed, () => next++, ROUNDS * (GROW + 1) * SERVICES);
  await ipvs.apply({ kind: 'flush' });
  ipvs.close();
  portChanges();
}

type Order = 'delete first' | 'delete last';

/** A Service port change, each in a fresh network namespace (an empty trash): both orders, twice. */
function portChanges(): void {
  console.log(
    `\nA Service port change: one virtual server re-created under a new port with the same ${PORT_CHANGE_DESTS} real servers, each in a fresh netns\n`,
  );
  console.log(`${'order'.padEnd(12)}  ${'us per add'.padStart(10)}  ${'vs delete last'.padStart(14)}`);
  console.log('-'.repeat(40));
  let last = 0;
  for (const order of ['delete last', 'delete first', 'delete last', 'delete first'] as Order[]) {
    // (a namespace's local routing table appears with its first address: NEW_DEST refuses every
    // address as a broadcast one until lo is up)
    const r = spawnSync(
      'unshare',
      [
        '--net',
        '--',
        'bash',
        '-c',
        'ip link set lo up && exec "$@"',
        '_',
        process.execPath,
        __filename,
        'port-change',
        order,
        String(PORT_CHANGE_DESTS),
      ],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) throw new Error(`port-change ${order}: ${r.stderr}`);
    const add = (JSON.parse(r.stdout) as { add: number }).add;
    if (order === 'delete last') last = add;
    console.log(`${order.padEnd(12)}  ${add.toFixed(0).padStart(10)}  ${`${(add / last).toFixed(2)}x`.padStart(14)}`);
  }
}

/** In its own namespace: the virtual server with `n` real servers, then the port change in `order`; prints us per add. */
async function portChange(order: Order, n: number): Promise<void> {
  const ipvs = await openIpvs();
  const old = virtualServer(0);
  const moved: VirtualServerSpec = { ...old, port: 81 };
  const rss = Array.from({ length: n }, (_, i) => realServer(i));
  const ok = async (ops: IpvsOp[]) => {
    const failed = (await ipvs.run(ops)).filter((r) => !r.ok);
    if (failed.length > 0)
      throw new Error(`${failed.length} of ${ops.length} ops failed: ${failed[0]!.ok ? '' : failed[0]!.error.message}`);
  };
  await ok([{ kind: 'newService', vs: old }, ...rss.map((rs): IpvsOp => ({ kind: 'newDest', vs: old, rs }))]);
  if (order === 'delete first') await ok([{ kind: 'delService', vs: old }]);
  await ok([{ kind: 'newService', vs: moved }]);
  const t = process.hrtime.bigint();
  await ok(rss.map((rs): IpvsOp => ({ kind: 'newDest', vs: moved, rs })));
  const add = Number(process.hrtime.bigint() - t) / 1e3 / n;
  if (order === 'delete last') await ok([{ kind: 'delService', vs: old }]);
  ipvs.close();
  console.log(JSON.stringify({ add }));
}

type Pattern = 'delete + re-add' | 'weight 0 + back';

/** Real servers whose address goes away and returns, one per virtual server: both patterns, alternating. */
async function returning(
  vss: readonly VirtualServerSpec[],
  timed: (ops: IpvsOp[]) => Promise<number>,
  fresh: () => number,
  deletedBefore: number,
): Promise<void> {
  // the returning real servers: added once, kept (weight 1) between the runs
  const stay = vss.map((vs) => ({ vs, rs: realServer(fresh()) }));
  await timed(stay.map(({ vs, rs }): IpvsOp => ({ kind: 'newDest', vs, rs })));
  let deleted = deletedBefore;
  const rows: { pattern: Pattern; deleted: number; away: number; during: number; back: number }[] = [];
  for (const pattern of ['weight 0 + back', 'delete + re-add', 'weight 0 + back', 'delete + re-add'] as Pattern[]) {
    const at = deleted;
    const away = await timed(
      stay.map(({ vs, rs }): IpvsOp =>
        pattern === 'delete + re-add' ? { kind: 'delDest', vs, rs } : { kind: 'setDest', vs, rs: { ...rs, weight: 0 } },
      ),
    );
    // new addresses meanwhile (pods replaced elsewhere): each add walks the whole trash
    const others = vss.map((vs) => ({ vs, rs: realServer(fresh()) }));
    const during = await timed(others.map(({ vs, rs }): IpvsOp => ({ kind: 'newDest', vs, rs })));
    await timed(others.map(({ vs, rs }): IpvsOp => ({ kind: 'delDest', vs, rs })));
    const back = await timed(
      stay.map(({ vs, rs }): IpvsOp =>
        pattern === 'delete + re-add' ? { kind: 'newDest', vs, rs } : { kind: 'setDest', vs, rs },
      ),
    );
    deleted += vss.length * (pattern === 'delete + re-add' ? 2 : 1);
    rows.push({ pattern, deleted: at, away, during, back });
  }
  console.log(
    `\nAddresses that go away and return, ${vss.length} (one per virtual server), against the trash above: us per op\n`,
  );
  console.log(
    `${'pattern'.padEnd(16)}  ${'deleted before'.padStart(14)}  ${'going away'.padStart(10)}  ${'new adds meanwhile'.padStart(18)}  ${'returning'.padStart(9)}  ${'away+back vs weight 0'.padStart(21)}`,
  );
  console.log('-'.repeat(97));
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    // against the other pattern's run next to it (the one before, the first against the second)
    const peer = rows[r.pattern === 'weight 0 + back' ? i : i - 1]!;
    const ratio = (r.away + r.back) / (peer.away + peer.back);
    console.log(
      `${r.pattern.padEnd(16)}  ${String(r.deleted).padStart(14)}  ${r.away.toFixed(0).padStart(10)}  ${r.during.toFixed(0).padStart(18)}  ${r.back.toFixed(0).padStart(9)}  ${`${ratio.toFixed(2)}x`.padStart(21)}`,
    );
  }
}

// `port-change ORDER N`: one port change (in the namespace it is given); `port-changes x x N`: the last part alone
const mode = process.argv[2];
(mode === 'port-change'
  ? portChange(process.argv[3] as Order, Number(process.argv[4]))
  : mode === 'port-changes'
    ? Promise.resolve(portChanges())
    : main()
).catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
