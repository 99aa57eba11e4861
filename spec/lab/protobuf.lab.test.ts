/**
 * The daemon's protobuf reading against the real kube-apiserver (issue 28): the same objects
 * listed and watched as JSON and as protobuf (the informers' Accept by default, as
 * kube-proxy's clientConnection.contentType) read the same. Every field of the JSON is in the
 * protobuf answer with the same value; what protobuf adds is only Go zero values ("", 0,
 * false, empty), which the JSON omits; and what the converters make of each object (the
 * Services' ports and refusals, the slices' endpoints, the Node's facts) is identical. The
 * committed descriptor is what the pinned .proto files give. Needs KUBE_IPVS_LAB.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { V1EndpointSlice, V1Node, V1Service } from '@kubernetes/client-node';
import { ApiKubeConfig, apiRequest, statusMessage } from '../../lib/k8s/api-request';
import { nodeInfo } from '../../lib/k8s/convert';
import { convertEndpointSlice } from '../../lib/tracker/endpoint-slice-convert';
import { convertService } from '../../lib/k8s/convert-service';
import { PROTOBUF_CONTENT_TYPE } from '../../lib/k8s/protobuf';
import { prunedObject } from '../../lib/k8s/prune';
import { listRaw } from '../../lib/k8s/raw-list';
import { ReportingWatch } from '../../lib/k8s/reporting-watch';
import { informerAccept } from '../../lib/daemon/api-config';
import { ROOT_TYPES, loadApiProtos, prunedDescriptor } from '../../scripts/k8s/gen-protobuf';
import generated from '../../lib/k8s/k8s-api-protobuf.json';
import { LabClient, labFromEnv, loadClusterUser } from '../../testkit/lab-client';

const lab: LabClient = labFromEnv();
const run = randomBytes(3).toString('hex');
const ns = `pb-${run}`;
const nodeName = `pb-node-${run}`;
type Json = Record<string, unknown>;

const svc = (name: string, spec: Json): Json => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: ns, labels: { app: name }, annotations: { note: name } },
  spec: { selector: { app: name }, ...spec },
});
const tcp = (port: number, targetPort: number | string, name = 'http') => ({ name, protocol: 'TCP', port, targetPort });

// the Service shapes a node programs, and the ones it skips
const SERVICES = [
  svc('affinity', {
    ports: [tcp(80, 8080)],
    sessionAffinity: 'ClientIP',
    sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } },
  }),
  svc('named', {
    ports: [{ name: 'dns', protocol: 'UDP', port: 53, targetPort: 'dns-alt' }, tcp(443, 'https', 'https')],
  }),
  svc('nodeport', { type: 'NodePort', externalTrafficPolicy: 'Local', ports: [tcp(80, 8080)] }),
  svc('lb', {
    type: 'LoadBalancer',
    externalTrafficPolicy: 'Local',
    loadBalancerSourceRanges: ['203.0.113.0/24'],
    allocateLoadBalancerNodePorts: false,
    ports: [tcp(80, 8080)],
  }),
  svc('external', { externalIPs: ['192.0.2.10'], internalTrafficPolicy: 'Local', ports: [tcp(80, 8080)] }),
  svc('sctp', {
    ports: [{ name: 'sctp', protocol: 'SCTP', port: 9999, targetPort: 9999 }],
    trafficDistribution: 'PreferClose',
  }),
  svc('headless', { clusterIP: 'None', ports: [tcp(80, 8080)] }),
  svc('extname', { type: 'ExternalName', externalName: 'example.com' }),
];

const slice = (name: string, service: string, addressType: string, endpoints: Json[]): Json => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name, namespace: ns, labels: { 'kubernetes.io/service-name': service } },
  addressType,
  endpoints,
  ports: [{ name: 'http', protocol: 'TCP', port: 8080, appProtocol: 'http' }],
});
const SLICES = [
  slice('affinity-1', 'affinity', 'IPv4', [
    { addresses: ['10.244.1.5'], conditions: { ready: true, serving: true, terminating: false }, nodeName, zone: 'z1' },
    { addresses: ['10.244.1.6'], conditions: { ready: false, serving: true, terminating: true }, nodeName: 'other' },
    { addresses: ['10.244.1.7'], conditions: { ready: false, serving: false, terminating: false } },
    {
      addresses: ['10.244.1.8'],
      conditions: {},
      hints: { forZones: [{ name: 'z1' }], forNodes: [{ name: nodeName }] },
    },
  ]),
  slice('lb-1', 'lb', 'IPv4', [{ addresses: ['10.244.2.5'], conditions: { ready: true }, nodeName }]),
  slice('v6-1', 'affinity', 'IPv6', [{ addresses: ['fd00:10:244::5'], conditions: { ready: true } }]),
];
const NODE: Json = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: nodeName, labels: { 'topology.kubernetes.io/zone': 'z1' } },
  spec: { podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24'] },
};

let server: string;
let json: ApiKubeConfig;
let pb: ApiKubeConfig;

/** A kubeconfig for the lab's API server a with `user`, whose informer Accept is `accept`. */
function configFor(ca: string, user: Json, accept: string): ApiKubeConfig {
  const kc = loadClusterUser(new ApiKubeConfig(), server, ca, user);
  kc.accept = accept;
  return kc;
}

let ca: string;

beforeAll(async () => {
  const info = await lab.info();
  server = await lab.server('a');
  ca = await lab.ca();
  const pki = path.join(info.dir, 'pki');
  // the lab's admin: its client certificate
  const admin = {
    'client-certificate-data': readFileSync(path.join(pki, 'client.crt')).toString('base64'),
    'client-key-data': readFileSync(path.join(pki, 'client.key')).toString('base64'),
  };
  json = configFor(ca, admin, 'application/json');
  pb = configFor(ca, admin, informerAccept(PROTOBUF_CONTENT_TYPE));
  await lab.kubectl(['create', 'namespace', ns]);
  await lab.apply([...SERVICES, ...SLICES, NODE]);
  const status = (kind: string, name: string, patch: Json, namespace?: string) =>
    lab.kubectl([
      'patch',
      kind,
      name,
      ...(namespace ? ['-n', namespace] : []),
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: patch }),
    ]);
  await status('service', 'lb', { loadBalancer: { ingress: [{ ip: '198.51.100.7', ipMode: 'VIP' }] } }, ns);
  await status('node', nodeName, { addresses: [{ type: 'InternalIP', address: '192.168.1.10' }] });
});

afterAll(async () => {
  // the objects themselves first: the lab runs no namespace controller, so a deleted
  // namespace keeps its Services, and the VM tests' proxies (sharing this lab) would program
  // this test's externalIP and NodePorts
  await lab.kubectl(['delete', '-n', ns, 'services,endpointslices', '--all', '--wait=false'], undefined, true);
  await lab.kubectl(['delete', 'namespace', ns, '--wait=false'], undefined, true);
  await lab.kubectl(['delete', 'node', nodeName, '--wait=false'], undefined, true);
});

/** Paths where `pbObj` differs from `jsonObj`: a JSON value missing or changed, or an added value that is not a Go zero value. */
function differences(jsonObj: unknown, pbObj: unknown, at = ''): string[] {
  const isZero = (v: unknown): boolean =>
    v === '' ||
    v === 0 ||
    v === false ||
    (Array.isArray(v) && v.length === 0) ||
    (typeof v === 'object' && v !== null && Object.values(v).every(isZero));
  if (jsonObj === undefined) return isZero(pbObj) ? [] : [`${at}: only in protobuf: ${JSON.stringify(pbObj)}`];
  if (typeof jsonObj !== 'object' || jsonObj === null)
    return jsonObj === pbObj ? [] : [`${at}: JSON ${JSON.stringify(jsonObj)}, protobuf ${JSON.stringify(pbObj)}`];
  if (typeof pbObj !== 'object' || pbObj === null)
    return [`${at}: JSON ${JSON.stringify(jsonObj)}, protobuf ${JSON.stringify(pbObj)}`];
  const keys = new Set([...Object.keys(jsonObj), ...Object.keys(pbObj)]);
  return [...keys].flatMap((k) => differences((jsonObj as Json)[k], (pbObj as Json)[k], `${at}.${k}`));
}

const mine = <T extends { metadata?: { namespace?: string; name?: string } }>(items: T[]) =>
  items.filter((i) => i.metadata?.namespace === ns || i.metadata?.name === nodeName);

describe('protobuf from the real kube-apiserver', () => {
  it('the committed descriptor is what the pinned .proto files give (scripts/k8s/gen-protobuf.ts)', () => {
    expect(generated.descriptor).toEqual(JSON.parse(JSON.stringify(prunedDescriptor(loadApiProtos(), ROOT_TYPES))));
  });

  it('answers the informers in protobuf (the daemon decodes it: no text body)', async () => {
    const res = await apiRequest(pb, { method: 'GET', path: `/api/v1/namespaces/${ns}/services`, accept: pb.accept });
    expect(res.status).toBe(200);
    expect(res.body).toBe('');
    expect(res.object).toMatchObject({ apiVersion: 'v1', kind: 'ServiceList' });
  });

  it.each<[string, string, (o: unknown) => unknown]>([
    ['Services', `/api/v1/namespaces/${ns}/services`, (o: unknown) => convertService(o as V1Service)],
    [
      'EndpointSlices',
      `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`,
      (o: unknown) => convertEndpointSlice(o as V1EndpointSlice, nodeName),
    ],
    ['Nodes', '/api/v1/nodes', (o: unknown) => nodeInfo(o as V1Node)],
  ])(
    '%s: the same fields and values, protobuf adding only zero values; the same conversion',
    async (_kind, listPath, convert) => {
      const [a, b] = await Promise.all([listRaw<V1Service>(json, listPath), listRaw<V1Service>(pb, listPath)]);
      // pruned as the informers keep them (the protobuf decoder prunes as it copies)
      const fromJson = mine(a.items).map(prunedObject);
      const fromPb = mine(b.items);
      expect(fromPb.map((i) => i.metadata!.name)).toEqual(fromJson.map((i) => i.metadata!.name));
      expect(fromJson.length).toBeGreaterThan(0);
      const diffs = fromJson.flatMap((j, i) => differences(j, fromPb[i]).map((d) => `${j.metadata!.name}${d}`));
      expect(diffs).toEqual([]);
      expect(fromPb.map(convert)).toEqual(fromJson.map(convert));
    },
  );

  it('a watch reads the same events as JSON and as protobuf frames', async () => {
    const listPath = `/api/v1/namespaces/${ns}/services`;
    const rv = (await listRaw(json, listPath)).metadata!.resourceVersion!;
    const watchFrom = (kc: ApiKubeConfig) => {
      const events: [string, unknown][] = [];
      let controller: AbortController | undefined;
      const started = new ReportingWatch(kc, { connected: () => undefined, stopped: () => false })
        .watch(
          listPath,
          { resourceVersion: rv, allowWatchBookmarks: false },
          (phase, obj) => events.push([phase, obj]),
          () => undefined,
        )
        .then((c) => (controller = c));
      return { events, started, stop: () => controller?.abort() };
    };
    const a = watchFrom(json);
    const b = watchFrom(pb);
    await Promise.all([a.started, b.started]);
    await lab.apply([svc('affinity', { ports: [tcp(80, 9090)], sessionAffinity: 'None' })]);
    await lab.kubectl(['delete', '-n', ns, 'service', 'named']);
    const deadline = Date.now() + 30_000;
    while ((a.events.length < 2 || b.events.length < 2) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    a.stop();
    b.stop();
    expect(b.events.map(([p]) => p)).toEqual(['MODIFIED', 'DELETED']);
    expect(b.events.map(([p]) => p)).toEqual(a.events.map(([p]) => p));
    expect(b.events.flatMap(([, o], i) => differences(a.events[i]![1], o))).toEqual([]);
    expect(b.events.map(([, o]) => convertService(o as V1Service))).toEqual(
      a.events.map(([, o]) => convertService(o as V1Service)),
    );
  });

  it("a refusal answered in protobuf reads as the JSON Status's message", async () => {
    const bad = (accept: string) => configFor(ca, { token: 'not-a-token' }, accept);
    const get = (kc: ApiKubeConfig) =>
      apiRequest(kc, { method: 'GET', path: `/api/v1/namespaces/${ns}/services`, accept: kc.accept });
    const [a, b] = await Promise.all([get(bad('application/json')), get(bad(pb.accept))]);
    expect(b.status).toBe(401);
    expect(a.status).toBe(401);
    expect(statusMessage(b.body)).toBe(statusMessage(a.body));
  });
});
