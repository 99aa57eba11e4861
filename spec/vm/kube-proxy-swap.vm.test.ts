// Swapping the real kube-proxy (IPVS mode, v1.37 built from k8s.io/kubernetes) for kube-ipvs on a
// live node, and back, as a DaemonSet rollout does it: SIGTERM to the old process (no
// --cleanup), then the new one starts with the same KubeProxyConfiguration, the same
// ServiceAccount token and the same API server (the lab's real kube-apiserver). Throughout,
// 50 new connections a second (a ClusterIP and an externalIP from a pod; a NodePort, a
// load-balancer VIP with source ranges and the externalIP from outside), 10 long-lived TCP
// connections through a ClusterIP and a UDP flow; no request may fail, no connection break,
// the flow must go on. After each swap the table is what the new owner programs from scratch.
import { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  e2eProxyConfig,
  LoggedProcess,
  SERVICE_ACCOUNT_DIR,
  startKubeIpvs,
  startKubeProxy,
} from '../../testkit/processes';
import { run, tryRun } from '../../testkit/netns';
import {
  SWAP_NODE,
  SwapAddresses,
  SwapTraffic,
  makeSwapNode,
  removeSwapNode,
  startSwapTraffic,
  applySwapObjects,
  removeSwapObjects,
  swapTable,
  swapTableLines,
} from '../../testkit/swap-traffic';
import { connectToLab, kubeProxyIdentity, labFromEnv } from '../../testkit/lab-client';
import { eventually } from '../../testkit/wait-for';

const RUN = randomBytes(3).toString('hex');
const NS = `swap-${RUN}`;
const NODE = `swap-node-${RUN}`;
const FILE_LABEL = { 'e2e.kube-ipvs.io/file': 'kube-proxy-swap' };
const { LB_IP, EXTERNAL_IP } = SWAP_NODE;

describe('a live swap between the real kube-proxy and kube-ipvs, both ways, under traffic', () => {
  const lab = labFromEnv();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-swap-'));
  const cfg = path.join(dir, 'config.conf');
  const children: ChildProcess[] = [];
  let kubeProxy: LoggedProcess | undefined;
  let daemon: LoggedProcess | undefined;
  let addrs: SwapAddresses;
  // one new connection every 100 ms from each of 5 clients: 50/s in all
  const traffic = new SwapTraffic(100);

  const ours = () => swapTableLines(run('ipvsadm', ['-Sn']), addrs);
  const expected = () => swapTable(addrs).sort();

  beforeAll(async () => {
    connectToLab();
    children.push(...(await makeSwapNode()));
    await lab.kubectl([
      'delete',
      'services,endpointslices',
      '-A',
      '-l',
      'e2e.kube-ipvs.io/file=kube-proxy-swap',
      '--wait=false',
    ]);
    addrs = await applySwapObjects(lab, NS, NODE, FILE_LABEL);
    await kubeProxyIdentity(lab, dir, { duration: '1h' });
    fs.writeFileSync(cfg, e2eProxyConfig({ dir, node: NODE, ipvs: ['syncPeriod: 30s'], forKubeProxy: true }));
  });

  afterAll(async () => {
    traffic.stop();
    await kubeProxy?.kill('SIGTERM');
    await daemon?.kill('SIGTERM');
    removeSwapNode(children);
    tryRun('ipvsadm', ['-C']);
    await removeSwapObjects(lab, NS, NODE, FILE_LABEL);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(SERVICE_ACCOUNT_DIR, { recursive: true, force: true });
  });

  it('kube-proxy serves: traffic flows from a pod and from outside, long connections and the UDP flow open', async () => {
    kubeProxy = startKubeProxy([`--config=${cfg}`, '--v=1']);
    await eventually("kube-proxy's table", ours, (r) => JSON.stringify(r) === JSON.stringify(expected()), 240_000);
    // and its ipsets and iptables rules, which its sync writes after the IPVS table (a request
    // in between was reset once in a CI run: kube-proxy's own start, before any swap)
    await eventually(
      "kube-proxy's sets and rules",
      () => run('ipset', ['save']) + run('iptables-save', ['-t', 'nat']),
      (t) =>
        [
          `add KUBE-CLUSTER-IP ${addrs.web},tcp:80`,
          `add KUBE-CLUSTER-IP ${addrs.dns},udp:53`,
          `add KUBE-NODE-PORT-TCP ${addrs.nodePort}`,
          `add KUBE-LOAD-BALANCER-SOURCE-CIDR ${LB_IP},tcp:80,192.0.2.0/24`,
          `add KUBE-EXTERNAL-IP ${EXTERNAL_IP},tcp:80`,
          '-A KUBE-SERVICES',
          'KUBE-NODE-PORT',
          'KUBE-LOAD-BALANCER',
        ].every((x) => t.includes(x)),
      240_000,
    );
    await new Promise((r) => setTimeout(r, 3000));
    startSwapTraffic(traffic, addrs);
    await traffic.goesOn(3000);
    expect(traffic.failures()).toEqual([]);
  });

  /** The failures since `from` (each phase is judged on its own). */
  const failedSince = (from: number) => traffic.failures().slice(from);

  it('kube-proxy -> kube-ipvs (SIGTERM, no cleanup, then start): no failed request, no broken connection or flow; adopted with no IPVS write', async () => {
    const from = traffic.failures().length;
    await kubeProxy!.kill('SIGTERM');
    kubeProxy = undefined;
    daemon = startKubeIpvs(['--config', cfg, '--v=2']);
    const first = await daemon.waitFor((l) => l.message === 'sync done', "kube-ipvs's first sync", 0, 280_000);
    await traffic.goesOn(5000);
    // a failure beside the daemon's start: what it logged, on the same clock as each "sent at"
    if (failedSince(from).length > 0)
      console.log(`kube-ipvs's log (the failures: ${failedSince(from).join('; ')}):\n${daemon.text.join('\n')}`);
    expect(failedSince(from)).toEqual([]);
    expect(traffic.broken()).toEqual([]);
    expect(ours()).toEqual(expected());
    // kube-proxy's table (every Service of the lab's, not only these) was what kube-ipvs
    // would program: adopted, nothing written
    expect(first).toMatchObject({ full: true, ipvsWrites: 0, ipvsFailures: 0 });
  });

  it('kube-ipvs -> kube-proxy: the same, the other way', async () => {
    const from = traffic.failures().length;
    await daemon!.kill('SIGTERM');
    daemon = undefined;
    kubeProxy = startKubeProxy([`--config=${cfg}`, '--v=1']);
    await traffic.goesOn(20_000); // kube-proxy's start and first syncs take a while in the guest
    expect(failedSince(from)).toEqual([]);
    expect(traffic.broken()).toEqual([]);
    expect(ours()).toEqual(expected());
    console.log(`requests served: ${traffic.served()}; ${traffic.longCount} long connections and flows kept`);
  });
});
