// IPv6 and dual-stack end to end, inside the VM: the real `kube-ipvs --config FILE` process with
// clusterCIDR unset (the families come from the node, as kube-proxy chooses them, not from
// clusterCIDR), the fake API server process, the real kernel and real IPv6 traffic.
//
// Addresses: pods 10.244.N.2 / fd00:10:244:N::2 behind gateways 10.244.N.1 / fd00:10:244:N::1
// on the node's veths (routing, no bridge); services 10.96.0.0/16 and fd00:10:96::/112; the
// node serves NodePorts on 192.0.2.1 and 2001:db8:1::1, the external client is 192.0.2.2 /
// 2001:db8:1::2.
import { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LoggedProcess, LogLine, startFixtureApiServer, startKubeIpvs } from '../../testkit/processes';
import { addPodIpv6, connect, deletePod, makePod, startEchoServer, tryRun } from '../../testkit/netns';

const API_PORT = 16444;
const NODE = 'node-a';
const NODE_IP = '192.0.2.1';
const NODE_IP6 = '2001:db8:1::1';
const POD1 = { name: 'pod1', ip: '10.244.1.2', gw: '10.244.1.1', ip6: 'fd00:10:244:1::2', gw6: 'fd00:10:244:1::1' }; // backend
const POD2 = { name: 'pod2', ip: '10.244.2.2', gw: '10.244.2.1', ip6: 'fd00:10:244:2::2', gw6: 'fd00:10:244:2::1' }; // client pod
const EXT1 = { name: 'ext1', ip: '192.0.2.2', gw: NODE_IP, ip6: '2001:db8:1::2', gw6: NODE_IP6 }; // external client
const PODS = [POD1, POD2, EXT1];

type Obj = Record<string, unknown>;
const meta = (namespace: string, name: string, extra: Obj = {}) => ({
  namespace,
  name,
  uid: `uid-${namespace}-${name}`,
  ...extra,
});

const node: Obj = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: NODE, uid: 'uid-node-a', labels: { 'kubernetes.io/hostname': NODE } },
  spec: { podCIDRs: ['10.244.0.0/16', 'fd00:10:244::/56'] },
  status: {
    addresses: [
      { type: 'InternalIP', address: NODE_IP },
      { type: 'InternalIP', address: NODE_IP6 },
      { type: 'Hostname', address: NODE },
    ],
  },
};

function service(name: string, spec: Obj): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta('default', name),
    spec: { type: 'NodePort', sessionAffinity: 'None', externalTrafficPolicy: 'Cluster', ...spec },
    status: { loadBalancer: {} },
  };
}

function slice(svc: string, name: string, addressType: 'IPv4' | 'IPv6', ip: string): Obj {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: meta('default', name, {
      labels: {
        'kubernetes.io/service-name': svc,
        'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
      },
    }),
    addressType,
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: [{ addresses: [ip], conditions: { ready: true, serving: true, terminating: false }, nodeName: NODE }],
  };
}

// IPv6 only: ClusterIP and NodePort
const v6 = service('v6', {
  ipFamilies: ['IPv6'],
  ipFamilyPolicy: 'SingleStack',
  clusterIP: 'fd00:10:96::10',
  clusterIPs: ['fd00:10:96::10'],
  ports: [{ name: 'http', port: 80, targetPort: 8080, nodePort: 30090, protocol: 'TCP' }],
});
// dual-stack: one cluster IP of each family, one EndpointSlice of each addressType
const dual = service('dual', {
  ipFamilies: ['IPv4', 'IPv6'],
  ipFamilyPolicy: 'RequireDualStack',
  clusterIP: '10.96.0.20',
  clusterIPs: ['10.96.0.20', 'fd00:10:96::20'],
  ports: [{ name: 'http', port: 80, targetPort: 8080, nodePort: 30091, protocol: 'TCP' }],
});
// IPv6 LoadBalancer with source ranges (the external client's /64 only)
const LB_IP6 = '2001:db8:113::10';
const lb6 = {
  ...service('lb6', {
    type: 'LoadBalancer',
    ipFamilies: ['IPv6'],
    clusterIP: 'fd00:10:96::30',
    clusterIPs: ['fd00:10:96::30'],
    ports: [{ name: 'http', port: 80, targetPort: 8080, nodePort: 30092, protocol: 'TCP' }],
    loadBalancerSourceRanges: ['2001:db8:1::/64'],
  }),
  status: { loadBalancer: { ingress: [{ ip: LB_IP6, ipMode: 'VIP' }] } },
};
// IPv6 external IP with externalTrafficPolicy Local: the client's address reaches the pod
const EXT_IP6 = '2001:db8:113::20';
const local6 = service('local6', {
  ipFamilies: ['IPv6'],
  clusterIP: 'fd00:10:96::40',
  clusterIPs: ['fd00:10:96::40'],
  externalIPs: [EXT_IP6],
  externalTrafficPolicy: 'Local',
  ports: [{ name: 'http', port: 80, targetPort: 8080, nodePort: 30093, protocol: 'TCP' }],
});
// IPv6 session affinity: IPVS persistence with an IPv6 netmask (a prefix length, not a mask)
const sticky6 = service('sticky6', {
  type: 'ClusterIP',
  ipFamilies: ['IPv6'],
  clusterIP: 'fd00:10:96::50',
  clusterIPs: ['fd00:10:96::50'],
  sessionAffinity: 'ClientIP',
  sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } },
  ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
});
const FIXTURES = [
  node,
  v6,
  slice('v6', 'v6-ipv6', 'IPv6', POD1.ip6),
  dual,
  slice('dual', 'dual-ipv4', 'IPv4', POD1.ip),
  slice('dual', 'dual-ipv6', 'IPv6', POD1.ip6),
  lb6,
  slice('lb6', 'lb6-ipv6', 'IPv6', POD1.ip6),
  local6,
  slice('local6', 'local6-ipv6', 'IPv6', POD1.ip6),
  sticky6,
  slice('sticky6', 'sticky6-ipv6', 'IPv6', POD1.ip6),
];

function config(dir: string): string {
  return [
    'apiVersion: kubeproxy.config.k8s.io/v1alpha1',
    'kind: KubeProxyConfiguration',
    'mode: ipvs',
    'clientConnection:',
    `  kubeconfig: ${path.join(dir, 'kubeconfig')}`,
    `hostnameOverride: ${NODE}`,
    // no clusterCIDR: both families all the same
    `nodePortAddresses: [192.0.2.0/24, "2001:db8:1::/64"]`,
    'healthzBindAddress: 127.0.0.1:10256',
    'metricsBindAddress: 127.0.0.1:10249',
    'ipvs:',
    '  syncPeriod: 10m',
    '',
  ].join('\n');
}

const isSync = (l: LogLine) => l.message === 'sync done';

describe('IPv6 and dual-stack end to end (clusterCIDR unset, real kernel, real traffic)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-dual-'));
  let apiserver: LoggedProcess;
  let daemon: LoggedProcess;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    // the node routes IPv6 (kube-proxy sets only net.ipv4.ip_forward; the node's IPv6
    // forwarding is the CNI's or the admin's)
    fs.writeFileSync('/proc/sys/net/ipv6/conf/all/forwarding', '1');
    for (const p of PODS) {
      makePod(p.name, p.ip, p.gw);
      addPodIpv6(p.name, p.ip6, p.gw6);
    }
    children.push(await startEchoServer(POD1.name, 'pod1', POD1.ip, 8080));
    children.push(await startEchoServer(POD1.name, 'pod1-v6', POD1.ip6, 8080));
    apiserver = await startFixtureApiServer(dir, API_PORT, FIXTURES);
    fs.writeFileSync(path.join(dir, 'config.conf'), config(dir));
    daemon = startKubeIpvs(['--config', path.join(dir, 'config.conf'), '--v=2']);
  });

  afterAll(async () => {
    await daemon?.kill('SIGTERM');
    await apiserver?.kill('SIGTERM');
    for (const c of children) c.kill('SIGKILL');
    for (const p of PODS) deletePod(p.name);
    tryRun('ipvsadm', ['-C']);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('proxies both families with clusterCIDR unset, primary family from the Node', async () => {
    // (the daemon's first line can take minutes in a loaded TCG guest: client-node loads slowly)
    const families = await daemon.waitFor((l) => l.dualStack !== undefined, 'the families line', 0, 600_000);
    expect(families).toMatchObject({
      families: ['ipv4', 'ipv6'],
      dualStack: true,
      primaryFamily: 'ipv4',
      primaryFrom: 'default',
    });
    const primary = await daemon.waitFor(
      (l) => l.primaryFrom === 'node',
      'the primary family from the Node',
      0,
      600_000,
    );
    expect(primary).toMatchObject({ primaryFamily: 'ipv4', nodeIPs: [NODE_IP, NODE_IP6] });
  });

  // what these objects program (virtual servers, kube-ipvs0, the inet6 sets, ip6tables) is the
  // step file spec/golden/cases/dual-stack-cluster-cidr-unset.yaml
  it('IPv6 traffic: pod to ClusterIP, external client to NodePort', async () => {
    await daemon.waitFor(isSync, 'the first sync');
    expect(connect(POD2.name, 'fd00:10:96::10', 80)).toEqual({ outcome: 'ok', reply: `pod1-v6 client=${POD2.ip6}` });
    expect(connect(EXT1.name, NODE_IP6, 30090).reply).toMatch(/^pod1-v6 client=/);
  });

  it('IPv6 from the node to a ClusterIP; LoadBalancer source ranges; eTP=Local external IP keeps the client address; session affinity', () => {
    expect(connect('', 'fd00:10:96::10', 80).reply).toMatch(/^pod1-v6 client=/);
    expect(connect(EXT1.name, LB_IP6, 80).reply).toMatch(/^pod1-v6 client=/);
    expect(connect(POD2.name, LB_IP6, 80, 3).outcome).toBe('timeout'); // not in the source ranges
    expect(connect(EXT1.name, EXT_IP6, 80)).toEqual({ outcome: 'ok', reply: `pod1-v6 client=${EXT1.ip6}` });
    for (let i = 0; i < 2; i++)
      expect(connect(POD2.name, 'fd00:10:96::50', 80)).toEqual({ outcome: 'ok', reply: `pod1-v6 client=${POD2.ip6}` });
  });

  it('a dual-stack Service answers on both families: cluster IPs and NodePorts', () => {
    expect(connect(POD2.name, '10.96.0.20', 80)).toEqual({ outcome: 'ok', reply: `pod1 client=${POD2.ip}` });
    expect(connect(POD2.name, 'fd00:10:96::20', 80)).toEqual({ outcome: 'ok', reply: `pod1-v6 client=${POD2.ip6}` });
    expect(connect(EXT1.name, NODE_IP, 30091).reply).toMatch(/^pod1 client=/);
    expect(connect(EXT1.name, NODE_IP6, 30091).reply).toMatch(/^pod1-v6 client=/);
  });
});
