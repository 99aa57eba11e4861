// Swapping the real kube-proxy (IPVS mode, v1.37 built from k8s.io/kubernetes) for kube-ipvs on a
// live node, and back, as a DaemonSet rollout does it: SIGTERM to the old process (no
// --cleanup), then the new one starts with the same KubeProxyConfiguration, the same
// ServiceAccount token and the same API server (the lab's real kube-apiserver). Throughout,
// new connections at a fixed rate to a ClusterIP from a pod and to a NodePort from outside, and
// long-lived TCP connections through a ClusterIP; none may fail or break. After each swap the
// table is what the new owner programs from scratch.
import { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { e2eProxyConfig, LoggedProcess, SERVICE_ACCOUNT_DIR, startKubeIpvs, startKubeProxy } from '../../testkit/processes';
import { run, tryRun } from '../../testkit/netns';
import { SWAP_NODE, SwapTraffic, makeSwapNode, removeSwapNode, swapTable } from '../../testkit/swap-traffic';
import { connectToLab, kubeProxyIdentity, labFromEnv } from '../../testkit/lab-client';
import { labNode, labService, labSlice } from '../../testkit/lab-objects';
import { eventually } from '../../testkit/wait-for';

const RUN = randomBytes(3).toString('hex');
const NS = `swap-${RUN}`;
const NODE = `swap-node-${RUN}`;
const FILE_LABEL = { 'e2e.kube-ipvs.io/file': 'kube-proxy-swap' };
const { NODE_IP, POD1, POD2, EXT1 } = SWAP_NODE;
const LONG_CLIENTS = 5;

describe('a live swap between the real kube-proxy and kube-ipvs, both ways, under traffic', () => {
  const lab = labFromEnv();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-swap-'));
  const cfg = path.join(dir, 'config.conf');
  const children: ChildProcess[] = [];
  let kubeProxy: LoggedProcess | undefined;
  let daemon: LoggedProcess | undefined;
  let web = '';
  let long = '';
  let nodePort = 0;
  // one new connection every 100 ms from each client: 20/s in all
  const traffic = new SwapTraffic(100);

  const ipvsRules = () => run('ipvsadm', ['-Sn']).split('\n').filter(Boolean).sort();
  const ours = () => ipvsRules().filter((l) => l.includes(`${web}:`) || l.includes(`${long}:`) || l.includes(`${NODE_IP}:${nodePort} `));
  const expected = () => swapTable(web, nodePort, long).sort();


  beforeAll(async () => {
    connectToLab();
    children.push(...(await makeSwapNode()));
    await lab.kubectl(['delete', 'services,endpointslices', '-A', '-l', 'e2e.kube-ipvs.io/file=kube-proxy-swap', '--wait=false']);
    const pod1 = [{ ip: POD1.ip, node: NODE }];
    await lab.apply([
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
      labNode(NODE, [NODE_IP]),
      labService(NS, 'web', { type: 'NodePort' }, { labels: FILE_LABEL }),
      labService(NS, 'long', { ports: [{ name: 'tcp', port: 9000, targetPort: 9000, protocol: 'TCP' }] }, { labels: FILE_LABEL }),
      labSlice(NS, 'web', 'web-1', pod1, { labels: FILE_LABEL }),
      labSlice(NS, 'long', 'long-1', pod1, { port: 9000, portName: 'tcp', labels: FILE_LABEL }),
    ]);
    const w = await lab.getJson<{ spec: { clusterIP: string; ports: { nodePort: number }[] } }>(['service', 'web', '-n', NS]);
    web = w.spec.clusterIP;
    nodePort = w.spec.ports[0]!.nodePort;
    long = (await lab.getJson<{ spec: { clusterIP: string } }>(['service', 'long', '-n', NS])).spec.clusterIP;
    await kubeProxyIdentity(lab, dir, { duration: '1h' });
    fs.writeFileSync(cfg, e2eProxyConfig({ dir, node: NODE, ipvs: ['syncPeriod: 30s'], forKubeProxy: true }));
  });

  afterAll(async () => {
    traffic.stop();
    await kubeProxy?.kill('SIGTERM');
    await daemon?.kill('SIGTERM');
    removeSwapNode(children);
    tryRun('ipvsadm', ['-C']);
    await lab.kubectl(['delete', 'services,endpointslices', '-n', NS, '-l', 'e2e.kube-ipvs.io/file=kube-proxy-swap', '--wait=false'], undefined, true);
    await lab.kubectl(['delete', 'node', NODE, '--wait=false'], undefined, true);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(SERVICE_ACCOUNT_DIR, { recursive: true, force: true });
  });

  it('kube-proxy serves: traffic flows from a pod and from outside, long connections open', async () => {
    kubeProxy = startKubeProxy([`--config=${cfg}`, '--v=1']);
    await eventually("kube-proxy's table", ours, (r) => JSON.stringify(r) === JSON.stringify(expected()), 240_000);
    // and its ipsets and iptables rules, which its sync writes after the IPVS table (a request
    // in between was reset once in a CI run: kube-proxy's own start, before any swap)
    await eventually("kube-proxy's sets and rules", () => run('ipset', ['save']) + run('iptables-save', ['-t', 'nat']),
      (t) => t.includes(`add KUBE-CLUSTER-IP ${web},tcp:80`) && t.includes(`add KUBE-NODE-PORT-TCP ${nodePort}`) && t.includes('-A KUBE-SERVICES') && t.includes('KUBE-NODE-PORT'), 240_000);
    await new Promise((r) => setTimeout(r, 3000));
    traffic.requests(POD2.name, web, 80).requests(EXT1.name, NODE_IP, nodePort).connections(POD2.name, long, 9000, LONG_CLIENTS);
    await traffic.goesOn(3000);
    expect(traffic.failures()).toEqual([]);
  });

  /** The failures since `from` (each phase is judged on its own). */
  const failedSince = (from: number) => traffic.failures().slice(from);

  it('kube-proxy -> kube-ipvs (SIGTERM, no cleanup, then start): no failed request, no broken connection; adopted with no IPVS write', async () => {
    const from = traffic.failures().length;
    await kubeProxy!.kill('SIGTERM');
    kubeProxy = undefined;
    daemon = startKubeIpvs(['--config', cfg, '--v=2']);
    const first = await daemon.waitFor((l) => l.message === 'sync done', "kube-ipvs's first sync", 0, 280_000);
    await traffic.goesOn(5000);
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
    console.log(`requests served: ${traffic.served()}; ${LONG_CLIENTS} long connections kept`);
  });
});
