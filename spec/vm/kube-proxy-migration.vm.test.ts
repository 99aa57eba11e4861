// From the real kube-proxy in iptables mode (kubeadm's default config: `mode: ""`) and in
// nftables mode to kube-ipvs on a live node, as a DaemonSet rollout does it: SIGTERM to
// kube-proxy (no --cleanup), then kube-ipvs starts with the same KubeProxyConfiguration, token
// and API server (the lab's real kube-apiserver). Under traffic (testkit/swap-traffic.ts: 50 new
// connections a second to a ClusterIP, an externalIP, a NodePort and a load-balancer VIP with
// source ranges, from a pod and from outside; 10 long-lived TCP connections; a UDP flow): no
// request may fail, no connection break, the flow must go on. kube-ipvs removes what the old mode leaves that
// would still steer or refuse traffic (kube-proxy's nftables tables, as kube-proxy itself does
// when it starts in IPVS mode; its iptables-mode chains, which kube-proxy's IPVS mode leaves),
// and the node ends up as kube-ipvs programs it from scratch.
import { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  e2eProxyConfig,
  KUBE_IPVS_BIN,
  LoggedProcess,
  logLineTimeMs,
  SERVICE_ACCOUNT_DIR,
  startKubeIpvs,
  startKubeProxy,
} from '../../testkit/processes';
import { connect, run, tryRun } from '../../testkit/netns';
import { connectToLab, kubeProxyIdentity, labFromEnv } from '../../testkit/lab-client';
import { labService, labSlice } from '../../testkit/lab-objects';
import { differences, snapshot } from '../../testkit/node-snapshot';
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
import { eventually } from '../../testkit/wait-for';

const RUN = randomBytes(3).toString('hex');
const FILE_LABEL = { 'e2e.kube-ipvs.io/file': 'kube-proxy-migration' };
const { POD1, POD2, LB_IP, EXTERNAL_IP } = SWAP_NODE;

/** what only kube-proxy's iptables mode writes in nat and filter (model/iptables.ts) */
const IPTABLES_MODE_LINE =
  /KUBE-(SVC|SVL|SEP|EXT|FW)-|KUBE-NODEPORTS|KUBE-EXTERNAL-SERVICES|KUBE-PROXY-CANARY|kubernetes load balancer firewall|has no endpoints/;

describe.each<[string, string]>([
  ['iptables', ''],
  ['nftables', 'nftables'],
])('from the real kube-proxy in %s mode to kube-ipvs, under traffic', (modeName, mode) => {
  const lab = labFromEnv();
  const ns = `migrate-${modeName}-${RUN}`;
  const nodeName = `migrate-${modeName}-node-${RUN}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `kube-ipvs-migrate-${modeName}-`));
  const cfg = path.join(dir, 'config.conf');
  const children: ChildProcess[] = [];
  const traffic = new SwapTraffic(100);
  let kubeProxy: LoggedProcess | undefined;
  let daemon: LoggedProcess | undefined;
  let addrs: SwapAddresses;
  let empty = '';

  const ours = () => swapTableLines(run('ipvsadm', ['-Sn']), addrs, [`${empty}:`]);
  const expected = (emptyServed: boolean) =>
    [
      ...swapTable(addrs),
      `-A -t ${empty}:80 -s rr`,
      ...(emptyServed ? [`-a -t ${empty}:80 -r ${POD1.ip}:8080 -m -w 1`] : []),
    ].sort();
  const netfilter = () =>
    ['iptables-save', 'ip6tables-save'].map((c) => run(c, ['-t', 'nat']) + run(c, ['-t', 'filter'])).join('');
  const nftTables = () => run('nft', ['list', 'tables']).split('\n').filter(Boolean);
  const slice = (svc: string, port = 8080, portName = 'http', protocol = 'TCP') =>
    labSlice(ns, svc, `${svc}-1`, [{ ip: POD1.ip, node: nodeName }], { port, portName, protocol, labels: FILE_LABEL });

  beforeAll(async () => {
    connectToLab();
    // as on every node (the CNI and the kubelet need it): iptables and nftables mode DNAT and
    // forward, where IPVS sends from LOCAL_IN
    fs.writeFileSync('/proc/sys/net/ipv4/ip_forward', '1');
    children.push(...(await makeSwapNode()));
    // the Service without endpoints until after the switch
    addrs = await applySwapObjects(lab, ns, nodeName, FILE_LABEL, [
      labService(ns, 'empty', {}, { labels: FILE_LABEL }),
    ]);
    const get = (name: string) => lab.getJson<{ spec: { clusterIP: string } }>(['service', name, '-n', ns]);
    empty = (await get('empty')).spec.clusterIP;
    await kubeProxyIdentity(lab, dir, { duration: '1h' });
    fs.writeFileSync(cfg, e2eProxyConfig({ dir, node: nodeName, ipvs: ['syncPeriod: 30s'], forKubeProxy: true, mode }));
  });

  afterAll(async () => {
    traffic.stop();
    await kubeProxy?.kill('SIGTERM');
    await daemon?.kill('SIGTERM');
    removeSwapNode(children);
    // the next mode starts from a clean node
    tryRun(process.execPath, [KUBE_IPVS_BIN, 'cleanup']);
    tryRun('nft', ['flush', 'ruleset']);
    await removeSwapObjects(lab, ns, nodeName, FILE_LABEL);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(SERVICE_ACCOUNT_DIR, { recursive: true, force: true });
  });

  it(`kube-proxy (${modeName} mode) serves; the Service without endpoints is refused`, async () => {
    kubeProxy = startKubeProxy([`--config=${cfg}`, '--v=1']);
    if (mode === 'nftables') {
      await eventually(
        "kube-proxy's nftables table",
        () => tryRun('nft', ['list', 'table', 'ip', 'kube-proxy']).stdout,
        (t) =>
          [
            `${addrs.web} . tcp . 80`,
            `${empty} . tcp . 80`,
            `tcp . ${addrs.nodePort}`,
            `${LB_IP} . tcp . 80`,
            `${EXTERNAL_IP} . tcp . 80`,
            `${addrs.dns} . udp . 53`,
          ].every((x) => t.includes(x)),
        240_000,
      );
    } else {
      await eventually(
        "kube-proxy's iptables rules",
        netfilter,
        (t) =>
          [
            `-d ${addrs.web}/32`,
            `-d ${empty}/32`,
            'has no endpoints',
            `--dport ${addrs.nodePort}`,
            `-d ${LB_IP}/32`,
            `-d ${EXTERNAL_IP}/32`,
            `-d ${addrs.dns}/32`,
          ].every((x) => t.includes(x)),
        240_000,
      );
    }
    await new Promise((r) => setTimeout(r, 3000));
    expect(ours()).toEqual([]);
    expect(connect('', empty, 80, 3).outcome).toBe('refused');
    startSwapTraffic(traffic, addrs);
    await traffic.goesOn(3000);
    expect(traffic.failures()).toEqual([]);
  });

  it(`kube-proxy (${modeName} mode) -> kube-ipvs (SIGTERM, no cleanup, then start): no failed request, no broken connection or flow; the old mode's rules are gone`, async () => {
    const from = traffic.failures().length;
    const stopping = Date.now();
    await kubeProxy!.kill('SIGTERM');
    kubeProxy = undefined;
    const starting = Date.now();
    daemon = startKubeIpvs(['--config', cfg, '--v=2']);
    const first = await daemon.waitFor((l) => l.message === 'sync done', "kube-ipvs's first sync", 0, 280_000);
    await traffic.goesOn(5000);
    const removedAt = daemon.lines
      .filter((l) => /removed kube-proxy's/.test(String(l.message)))
      .map((l) => logLineTimeMs(l));
    console.log(
      `${modeName}: SIGTERM to kube-proxy at ${stopping}, kube-ipvs started at ${starting}, first sync done at ${logLineTimeMs(first)}, leftovers removed at ${removedAt.join(', ')}`,
    );
    // a failed request: what kube-ipvs was doing then (its log from 3 s before to 3 s after)
    const sentAt = traffic
      .failures()
      .slice(from)
      .map((f) => Number(/\(sent at (\d+)\)/.exec(f)?.[1]));
    if (sentAt.length > 0) {
      const [lo, hi] = [Math.min(...sentAt) - 3000, Math.max(...sentAt) + 3000];
      const around = daemon.lines.filter((l) => logLineTimeMs(l) >= lo && logLineTimeMs(l) <= hi);
      console.log(
        `kube-ipvs's log around the failures:\n${around.map((l) => `${logLineTimeMs(l)} ${JSON.stringify(l)}`).join('\n')}`,
      );
    }
    expect(traffic.failures().slice(from)).toEqual([]);
    expect(traffic.broken()).toEqual([]);
    expect(ours()).toEqual(expected(false));
    // kube-proxy's own leftovers of that mode: none in the tables, one log line saying so
    expect(
      netfilter()
        .split('\n')
        .filter((l) => IPTABLES_MODE_LINE.test(l)),
    ).toEqual([]);
    expect(nftTables().filter((t) => / kube-proxy$/.test(t))).toEqual([]);
    const removed = daemon.lines.filter((l) => /^(ipv4: )?removed kube-proxy's/.test(String(l.message)));
    expect(removed.length).toBeGreaterThan(0);
  });

  it('the Service that had no endpoints at the switch answers once it has one (the old mode refused it)', async () => {
    await lab.apply([slice('empty')]);
    await eventually(
      'the empty Service served',
      ours,
      (r) => JSON.stringify(r) === JSON.stringify(expected(true)),
      60_000,
    );
    // from the node: OUTPUT is where iptables mode's filter KUBE-SERVICES REJECTed it
    expect(connect('', empty, 80, 5)).toMatchObject({ outcome: 'ok' });
    expect(connect(POD2.name, empty, 80, 5)).toMatchObject({ outcome: 'ok' });
    await traffic.goesOn(2000);
    expect(traffic.broken()).toEqual([]);
  });

  it('the node is what kube-ipvs programs from scratch (after kube-ipvs cleanup, a fresh start)', async () => {
    const migrated = snapshot('');
    traffic.stop();
    await daemon!.kill('SIGTERM');
    expect(tryRun(process.execPath, [KUBE_IPVS_BIN, 'cleanup'])).toMatchObject({ status: 0 });
    daemon = startKubeIpvs(['--config', cfg, '--v=2']);
    await daemon.waitFor((l) => l.message === 'sync done', "kube-ipvs's first sync from scratch", 0, 280_000);
    expect(differences(migrated, snapshot(''))).toEqual([]);
    console.log(
      `${modeName} mode -> kube-ipvs: ${traffic.served()} requests served, ${traffic.longCount} long connections and flows kept`,
    );
  });
});
