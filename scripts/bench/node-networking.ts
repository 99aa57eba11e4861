/**
 * Node networking benchmark (run as root in the VM: node dist/scripts/bench/node-networking.js).
 * Desired state for 10,000 services: 10,000 cluster IP:port entries (plus 500 UDP DNS-like
 * ones), 2,000 TCP node ports, 20 load balancers (4 with source ranges), 1,000 local endpoints
 * (hairpin), every cluster IP on kube-ipvs0 (KUBE-IPVS-IPS). Prints execs and wall time of the
 * first sync, of a no-change resync and of a one-service change, for ipsets and iptables.
 * Peer: kube-proxy's way (one `ipset add` process per entry), measured on a sample of entries
 * in the same run and extrapolated (marked as such). Numbers inform; nothing asserts on them.
 */
import { ChildProcessExec } from '../../lib/kernel/exec';
import { CountingExec } from '../../testkit/counting-exec';
import { createIpset } from '../../lib/kernel/ipset/ipset-restore';
import { createIptables } from '../../lib/kernel/iptables/iptables-restore';
import { IptablesBackend } from '../../lib/kernel/iptables/iptables';
import { nonEmptySetKeys, planIpsets } from '../../lib/plan/ipsets';
import { planIptables } from '../../lib/plan/iptables';
import { SetKey } from '../../lib/model/names';
import { IpsetMember, entryIp, entryIpPort, entryIpPortIp, entryIpPortNet, entryPort } from '../../lib/model/ipset';

const SERVICES = Number(process.env.BENCH_SERVICES ?? 10_000);
const PEER_SAMPLE = Number(process.env.BENCH_PEER_SAMPLE ?? 200);
const BACKEND = (process.env.BENCH_BACKEND ?? 'nft') as IptablesBackend;

function ip(i: number, base: [number, number]): string {
  return `${base[0]}.${base[1] + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
}

function members(services: number): Partial<Record<SetKey, IpsetMember[]>> {
  const m: Record<string, IpsetMember[]> = {
    CLUSTER_IP: [],
    IPVS_IPS: [],
    NODE_PORT_TCP: [],
    LOOP_BACK: [],
    LOAD_BALANCER: [],
    LOAD_BALANCER_FW: [],
    LOAD_BALANCER_SOURCE_CIDR: [],
  };
  for (let i = 1; i <= services; i++) {
    const cip = ip(i, [10, 96]);
    m.CLUSTER_IP!.push(entryIpPort(cip, 'tcp', 80));
    if (i <= 500) m.CLUSTER_IP!.push(entryIpPort(cip, 'udp', 53));
    m.IPVS_IPS!.push(entryIp(cip));
    if (i <= 2000) m.NODE_PORT_TCP!.push(entryPort(30000 + i));
    if (i <= 1000) m.LOOP_BACK!.push(entryIpPortIp(ip(i, [10, 244]), 'tcp', 8080, ip(i, [10, 244])));
  }
  for (let i = 1; i <= 20; i++) {
    const lb = `203.0.113.${i}`;
    m.LOAD_BALANCER!.push(entryIpPort(lb, 'tcp', 443));
    if (i <= 4) {
      m.LOAD_BALANCER_FW!.push(entryIpPort(lb, 'tcp', 443));
      m.LOAD_BALANCER_SOURCE_CIDR!.push(entryIpPortNet(lb, 'tcp', 443, `198.51.100.${i * 16}/28`));
    }
  }
  return m as Partial<Record<SetKey, IpsetMember[]>>;
}

interface Row {
  step: string;
  execs: number;
  ms: number;
  note: string;
}

async function timed(step: string, exec: CountingExec, f: () => Promise<string>): Promise<Row> {
  exec.reset();
  const t0 = process.hrtime.bigint();
  const note = await f();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  return { step, execs: exec.count, ms, note };
}

async function main(): Promise<void> {
  const exec = new CountingExec(new ChildProcessExec());
  const ipset = createIpset(exec);
  const ipt = createIptables({ family: 'ipv4', backend: BACKEND, exec });
  const rows: Row[] = [];
  const m = members(SERVICES);
  const entries = Object.values(m).reduce((n, l) => n + (l?.length ?? 0), 0);

  rows.push(await timed('ipset observe (ipset save)', exec, async () => `${(await ipset.observe()).size} sets`));
  rows.push(
    await timed('ipset first sync', exec, async () => {
      const r = await ipset.sync(planIpsets('ipv4', m));
      return `${r.created.length} created, ${r.added} added`;
    }),
  );
  rows.push(
    await timed('ipset no-change resync', exec, async () => {
      const r = await ipset.sync(planIpsets('ipv4', members(SERVICES)));
      return `${r.added} added, ${r.deleted} deleted`;
    }),
  );
  const changed = members(SERVICES + 1);
  rows.push(
    await timed('ipset one service added', exec, async () => {
      const r = await ipset.sync(planIpsets('ipv4', changed));
      return `${r.added} added, ${r.deleted} deleted`;
    }),
  );

  const live = nonEmptySetKeys('ipv4', planIpsets('ipv4', m));
  const lbOut = Array.from({ length: 16 }, (_, i) => ({
    lbIP: `203.0.113.${i + 5}`,
    proto: 'tcp' as const,
    port: 443,
  }));
  const plan = () =>
    planIptables({
      family: 'ipv4',
      clusterCIDR: '10.244.0.0/16',
      nonEmptySets: live,
      lbOutFilter: lbOut,
      randomFully: true,
    });
  rows.push(
    await timed(`iptables first sync (${BACKEND})`, exec, async () => {
      const r = await ipt.sync(plan());
      return `${r.restoreText.split('\n').length - 1} restore lines, ${r.insertedJumps.length} jumps inserted`;
    }),
  );
  rows.push(
    await timed('iptables no-change resync', exec, async () => ((await ipt.sync(plan())).wrote ? 'wrote' : 'skipped')),
  );
  rows.push(
    await timed('iptables change (one LB out-filter)', exec, async () => {
      const p = planIptables({
        family: 'ipv4',
        clusterCIDR: '10.244.0.0/16',
        nonEmptySets: live,
        lbOutFilter: lbOut.slice(1),
        randomFully: true,
      });
      return (await ipt.sync(p)).wrote ? 'wrote' : 'skipped';
    }),
  );

  // peer: kube-proxy adds each entry with its own `ipset add NAME ENTRY -exist` process
  await exec.run('ipset', [
    'create',
    'BENCH-PEER',
    'hash:ip,port',
    'family',
    'inet',
    'hashsize',
    '1024',
    'maxelem',
    '65536',
    '-exist',
  ]);
  const sample = (m.CLUSTER_IP ?? []).slice(0, PEER_SAMPLE);
  const peer = await timed(`peer: ipset add per entry (${sample.length} sampled)`, exec, async () => {
    for (const e of sample) await exec.run('ipset', ['add', 'BENCH-PEER', e, '-exist']);
    return '';
  });
  const perEntry = peer.ms / Math.max(1, sample.length);
  peer.note = `${perEntry.toFixed(2)} ms/entry -> ~${((perEntry * entries) / 1000).toFixed(1)} s and ${entries} execs for ${entries} entries (extrapolated)`;
  rows.push(peer);
  await exec.run('ipset', ['destroy', 'BENCH-PEER']);

  const w = Math.max(...rows.map((r) => r.step.length));
  console.log(`node-networking bench: ${SERVICES} services, ${entries} ipset entries, iptables backend ${BACKEND}`);
  console.log(`${'step'.padEnd(w)} | execs |   wall ms | note`);
  console.log(`${'-'.repeat(w)}-|-------|-----------|-----`);
  for (const r of rows)
    console.log(`${r.step.padEnd(w)} | ${String(r.execs).padStart(5)} | ${r.ms.toFixed(1).padStart(9)} | ${r.note}`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
