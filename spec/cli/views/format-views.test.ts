// The views as text: `service list` rows (golden text written by hand), `status` lines, and the
// kernel fallback's rows (types from kube-proxy's sets, names unknown, weight 0 draining).
import { formatServiceList } from '../../../lib/cli/views/format-service-list';
import { formatAge, formatStatus } from '../../../lib/cli/views/format-status';
import { kernelServiceList } from '../../../lib/cli/views/kernel-service-list';
import { ServiceListResponse, StatusResponse } from '../../../lib/model/views';
import { AF_INET, AF_INET6, IPPROTO_TCP, IPPROTO_UDP } from '../../../lib/uapi/inet';
import { IP_VS_SVC_F } from '../../../lib/uapi/ip_vs';
import { entry, rs, vs } from '../builders';

const LIST: ServiceListResponse = {
  source: 'daemon',
  frontends: [
    {
      id: 1,
      frontend: '10.96.0.10:80/TCP',
      type: 'ClusterIP',
      service: 'default/web:http',
      scheduler: 'rr',
      affinity: { kind: 'None' },
      backends: [
        { address: '10.244.1.2:8080', state: 'terminating', weight: 1, activeConns: 0, inactConns: 0 },
        { address: '10.244.2.2:8080', state: 'draining', weight: 0, activeConns: 3, inactConns: 0 },
      ],
    },
    {
      id: 12,
      frontend: '192.0.2.1:30080/TCP',
      type: 'NodePort',
      service: 'default/web:http',
      scheduler: 'rr',
      affinity: { kind: 'None' },
      backends: [{ address: '10.244.1.2:8080', state: 'active', weight: 1, activeConns: 0, inactConns: 0 }],
    },
    {
      id: 3,
      frontend: '10.96.0.11:53/UDP',
      type: null,
      service: null,
      scheduler: 'sh',
      affinity: { kind: 'ClientIP', timeoutSeconds: 600 },
      backends: [],
    },
  ],
};

describe('formatServiceList', () => {
  it('one row per frontend, one backend per line under the Backend column', () => {
    expect(formatServiceList(LIST)).toBe(
      [
        'ID   Frontend              Service Type   Service            Scheduler   Affinity        Backend',
        '1    10.96.0.10:80/TCP     ClusterIP      default/web:http   rr          None            1 => 10.244.1.2:8080 (terminating, weight 1)',
        '                                                                                         2 => 10.244.2.2:8080 (draining, weight 0)',
        '12   192.0.2.1:30080/TCP   NodePort       default/web:http   rr          None            1 => 10.244.1.2:8080 (active, weight 1)',
        '3    10.96.0.11:53/UDP     -              -                  sh          ClientIP 600s   (no backends)',
        '',
      ].join('\n'),
    );
  });

  it('no frontends: the header alone', () => {
    expect(formatServiceList({ source: 'daemon', frontends: [] })).toBe(
      'ID   Frontend   Service Type   Service   Scheduler   Affinity   Backend\n',
    );
  });
});

describe('kernelServiceList (no daemon)', () => {
  const sets = new Map([
    ['KUBE-CLUSTER-IP', { members: new Set(['10.96.0.10,tcp:80']) }],
    ['KUBE-NODE-PORT-UDP', { members: new Set(['30053']) }],
    ['KUBE-LOAD-BALANCER', { members: new Set(['203.0.113.10,tcp:80']) }],
    ['KUBE-EXTERNAL-IP-LOCAL', { members: new Set(['203.0.113.20,tcp:80']) }],
    ['KUBE-6-CLUSTER-IP', { members: new Set(['2001:db8:96::a,tcp:80']) }],
  ]);
  it('rows in order, types from the sets, unknown ones null, weight 0 draining, persistence as ClientIP', () => {
    const table = [
      entry(vs({ address: '203.0.113.20', port: 80 }), rs({ address: '10.244.1.2', port: 8080 })),
      entry(vs({ af: AF_INET6, address: '2001:db8:96::a', port: 80 })),
      entry(
        vs({ address: '10.96.0.10', port: 80, flags: IP_VS_SVC_F.PERSISTENT, timeout: 600 }),
        rs({ address: '10.244.2.2', port: 8080, weight: 0, activeConns: 2 }),
        rs({ address: '10.244.1.2', port: 8080 }),
      ),
      entry(vs({ address: '192.0.2.1', port: 30053, protocol: IPPROTO_UDP })),
      entry(vs({ address: '203.0.113.10', port: 80 })),
      entry(vs({ address: '192.0.2.1', port: 443, scheduler: 'wlc' })), // keepalived's: no set names it
    ];
    const list = kernelServiceList(table, sets);
    expect(list.source).toBe('kernel');
    expect(list.frontends.map((f) => [f.id, f.frontend, f.type, f.service, f.scheduler, f.affinity.kind])).toEqual([
      [1, '10.96.0.10:80/TCP', 'ClusterIP', null, 'rr', 'ClientIP'],
      [2, '192.0.2.1:443/TCP', null, null, 'wlc', 'None'],
      [3, '203.0.113.10:80/TCP', 'LoadBalancer', null, 'rr', 'None'],
      [4, '203.0.113.20:80/TCP', 'ExternalIP', null, 'rr', 'None'],
      [5, '192.0.2.1:30053/UDP', 'NodePort', null, 'rr', 'None'],
      [6, '[2001:db8:96::a]:80/TCP', 'ClusterIP', null, 'rr', 'None'],
    ]);
    expect(list.frontends[0]!.backends).toEqual([
      { address: '10.244.1.2:8080', state: 'active', weight: 1, activeConns: 0, inactConns: 0 },
      { address: '10.244.2.2:8080', state: 'draining', weight: 0, activeConns: 2, inactConns: 0 },
    ]);
    expect(list.frontends[0]!.affinity).toEqual({ kind: 'ClientIP', timeoutSeconds: 600 });
  });
  it('no sets at all: every type unknown', () => {
    expect(
      kernelServiceList([entry(vs({ af: AF_INET, protocol: IPPROTO_TCP }))], new Map()).frontends[0]!.type,
    ).toBeNull();
  });
});

const NOW = Date.parse('2026-11-23T12:00:00.000Z');
const STATUS: StatusResponse = {
  mode: 'ipvs',
  node: { name: 'node-a', ips: ['192.0.2.1'], zone: 'zone-a', podCIDRs: ['10.244.0.0/24'] },
  families: ['ipv4'],
  devices: [
    { name: 'kube-ipvs0', role: 'kube-ipvs0', addresses: ['10.96.0.10', '10.96.0.11'] },
    { name: 'eth0', role: 'NodePort', addresses: ['192.0.2.1'] },
  ],
  scheduler: { default: 'rr', overriddenBy: 1 },
  sessionAffinity: { enabled: true, frontends: 1 },
  gracefulTermination: {
    enabled: true,
    protocols: ['TCP'],
    drainTimeoutSeconds: 600,
    checkIntervalSeconds: 15,
    draining: 1,
  },
  services: {
    clusterIP: true,
    nodePort: { enabled: true, addresses: ['192.0.2.1'], portsInUse: [30080, 30081] },
    loadBalancer: true,
    externalIPs: true,
  },
  initialized: true,
  lastFullSync: { at: '2026-11-23T11:58:00.000Z', durationMs: 12, ipvsWrites: 14, ipvsFailures: 0, execs: 2 },
  lastPartialSync: null,
  driftRepairs: 2,
  refusedFrontends: [],
  counts: { services: 2, servicePorts: 3, virtualServers: 5, realServers: 9, draining: 1, boundAddresses: 2 },
  totals: { syncs: 7, fullSyncs: 2, ipvsWrites: 20, ipvsFailures: 1, execs: 4 },
  config: {
    syncPeriod: '30s',
    minSyncPeriod: '1s',
    excludeCIDRs: [],
    excludeClusterCIDRs: ['10.250.0.0/16'],
    clusterCIDRs: ['10.244.0.0/16'],
    nodePortAddresses: [],
    masqueradeAll: false,
    masqueradeBit: 14,
    strictARP: true,
    detectLocalMode: 'ClusterCIDR',
    ipvsTimeouts: { tcp: 0, tcpFin: 0, udp: 0 },
    healthzBindAddress: '0.0.0.0:10256',
    metricsBindAddress: '127.0.0.1:10249',
  },
};

describe('formatStatus', () => {
  it("the short form: cilium status's KubeProxyReplacement Details, for IPVS", () => {
    expect(formatStatus(STATUS, { verbose: false, now: NOW })).toBe(
      [
        'Mode:                   ipvs',
        'Node:                   node-a (192.0.2.1)',
        'Devices:                kube-ipvs0 (2 addresses), eth0 192.0.2.1 (NodePort)',
        'Scheduler:              rr (1 Service overrides it)',
        'Session Affinity:       Enabled (ClientIP as IPVS persistence, 1 frontend)',
        'Graceful Termination:   Enabled (TCP; 1 real server draining)',
        'Services:',
        '- ClusterIP:            Enabled',
        "- NodePort:             Enabled (on 192.0.2.1; ports in use: 30080, 30081; range: the API server's --service-node-port-range)",
        '- LoadBalancer:         Enabled',
        '- externalIPs:          Enabled',
        'Synced:                 yes',
        'Last full sync:         2026-11-23T11:58:00.000Z, 2m ago (took 12 ms, 14 IPVS writes, 2 execs)',
        'Last partial sync:      never',
        'Drift repairs:          2',
        'Refused frontends:      none',
        'Counts:                 2 Services, 3 service ports, 5 virtual servers, 9 real servers (1 draining), 2 addresses on kube-ipvs0',
        '',
      ].join('\n'),
    );
  });

  it('--verbose adds the zone, families, each device, drain bounds, totals and the configuration', () => {
    const text = formatStatus(STATUS, { verbose: true, now: NOW });
    for (const line of [
      'Zone:                   zone-a',
      'IP families:            ipv4',
      '  kube-ipvs0 (kube-ipvs0): 10.96.0.10, 10.96.0.11',
      '  eth0 (NodePort): 192.0.2.1',
      'Graceful Termination:   Enabled (TCP; drained at 0 connections, checked every 15s, at most 600s; 1 real server draining)',
      'Totals:                 7 syncs (2 full), 20 IPVS writes (1 refused), 4 execs',
      '- syncPeriod:           30s (min 1s)',
      '- excludeClusterCIDRs:  10.250.0.0/16',
      '- IPVS timeouts:        tcp 0s, tcpfin 0s, udp 0s (0: kernel default)',
    ]) {
      expect(text.split('\n')).toContain(line);
    }
    expect(formatStatus(STATUS, { verbose: false, now: NOW })).not.toContain('Totals');
  });

  it('refused frontends (issue 25 item 2): counted, then one line each; --verbose adds why', () => {
    const refused = {
      service: 'aaa/np',
      field: 'spec.ports[].nodePort',
      value: '192.0.2.1',
      reason: 'ForeignVirtualServer',
      message: 'virtual server TCP/192.0.2.1:30443 exists',
    };
    const short = formatStatus({ ...STATUS, refusedFrontends: [refused] }, { verbose: false, now: NOW }).split('\n');
    expect(short).toContain('Refused frontends:      1 (not programmed)');
    expect(short).toContain('  aaa/np spec.ports[].nodePort 192.0.2.1: ForeignVirtualServer');
    expect(formatStatus({ ...STATUS, refusedFrontends: [refused] }, { verbose: true, now: NOW }).split('\n')).toContain(
      '  aaa/np spec.ports[].nodePort 192.0.2.1: ForeignVirtualServer: virtual server TCP/192.0.2.1:30443 exists',
    );
    expect(formatServiceList({ source: 'daemon', frontends: [], refused: [refused] })).toBe(
      'ID   Frontend   Service Type   Service   Scheduler   Affinity   Backend\n\nRefused frontends (not programmed):\n' +
        '  aaa/np spec.ports[].nodePort 192.0.2.1: ForeignVirtualServer: virtual server TCP/192.0.2.1:30443 exists\n',
    );
  });

  it('ages', () => {
    expect([0, 999, 1000, 119_000, 120_000, 7_199_000, 7_200_000, 172_800_000].map(formatAge)).toEqual([
      'just now',
      'just now',
      '1s ago',
      '119s ago',
      '2m ago',
      '119m ago',
      '2h ago',
      '2d ago',
    ]);
  });
});
