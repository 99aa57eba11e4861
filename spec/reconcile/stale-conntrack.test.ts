import {
  conntrackCleanupTriggers,
  conntrackFrontends,
  staleConntrackFlows,
  ConntrackFrontend,
} from '../../lib/reconcile/stale-conntrack';
import { ConntrackFlow } from '../../lib/model/conntrack';
import { DesiredVirtualServer } from '../../lib/plan/service-plan';

// Addresses: 10.96.0.0/16 ClusterIPs, 192.0.2.0/24 node and clients, 198.51.100.0/24 pods,
// 203.0.113.0/24 external/LB IPs; 2001:db8::/32 IPv6. Protocol numbers: UDP 17, TCP 6, SCTP 132.
const UDP = 17;
const TCP = 6;
const SCTP = 132;

const flow = (
  protocol: number,
  dst: string,
  dstPort: number,
  replySrc: string,
  replySrcPort: number,
  family: 'ipv4' | 'ipv6' = 'ipv4',
): ConntrackFlow => {
  const client = family === 'ipv4' ? '192.0.2.1' : '2001:db8::1';
  return {
    family,
    protocol,
    orig: { src: client, dst, srcPort: 40000, dstPort },
    reply: { src: replySrc, dst: client, srcPort: replySrcPort, dstPort: 40000 },
    zone: 0,
  };
};

const frontend = (
  protocol: number,
  address: string,
  port: number,
  endpoints: string[],
  family: 'ipv4' | 'ipv6' = 'ipv4',
): ConntrackFrontend => ({
  family,
  protocol,
  address,
  port,
  endpoints: endpoints.map((e) => {
    const i = e.lastIndexOf(':');
    return { address: e.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(e.slice(i + 1)) };
  }),
});

const dns = frontend(UDP, '10.96.0.10', 53, ['198.51.100.5:53']);
const lb = frontend(UDP, '203.0.113.7', 53, ['198.51.100.5:53']);
const nodePort = frontend(UDP, '192.0.2.2', 30053, ['198.51.100.5:53']);
const sctp = frontend(SCTP, '10.96.0.20', 3868, ['198.51.100.9:3868']);
const empty = frontend(UDP, '10.96.0.30', 53, []);
const v6 = frontend(UDP, '2001:db8::a', 53, ['[2001:db8::5]:53'], 'ipv6');

interface Case {
  name: string;
  flow: ConntrackFlow;
  stale: boolean;
}

const cases: Case[] = [
  {
    name: 'ClusterIP flow to the current endpoint stays',
    flow: flow(UDP, '10.96.0.10', 53, '198.51.100.5', 53),
    stale: false,
  },
  {
    name: 'ClusterIP flow to a gone endpoint is stale',
    flow: flow(UDP, '10.96.0.10', 53, '198.51.100.4', 53),
    stale: true,
  },
  {
    name: 'same endpoint address, old target port: stale',
    flow: flow(UDP, '10.96.0.10', 53, '198.51.100.5', 5353),
    stale: true,
  },
  {
    name: 'blackholed while there was no endpoint (reply from the VIP itself): stale',
    flow: flow(UDP, '10.96.0.10', 53, '10.96.0.10', 53),
    stale: true,
  },
  {
    name: 'LoadBalancer IP flow to a gone endpoint is stale',
    flow: flow(UDP, '203.0.113.7', 53, '198.51.100.4', 53),
    stale: true,
  },
  {
    name: 'NodePort on a node address to a gone endpoint is stale',
    flow: flow(UDP, '192.0.2.2', 30053, '198.51.100.4', 53),
    stale: true,
  },
  {
    name: 'the NodePort number on a foreign address is not ours (kube-proxy would delete it)',
    flow: flow(UDP, '192.0.2.99', 30053, '198.51.100.4', 53),
    stale: false,
  },
  {
    name: 'another port of the ClusterIP is not a frontend',
    flow: flow(UDP, '10.96.0.10', 54, '198.51.100.4', 54),
    stale: false,
  },
  {
    name: 'TCP to the same address:port is never touched',
    flow: flow(TCP, '10.96.0.10', 53, '198.51.100.4', 53),
    stale: false,
  },
  {
    name: 'a UDP flow to an SCTP frontend is not the frontend',
    flow: flow(UDP, '10.96.0.20', 3868, '198.51.100.4', 3868),
    stale: false,
  },
  {
    name: 'SCTP flow to a gone endpoint is stale',
    flow: flow(SCTP, '10.96.0.20', 3868, '198.51.100.4', 3868),
    stale: true,
  },
  {
    name: 'SCTP flow to the current endpoint stays',
    flow: flow(SCTP, '10.96.0.20', 3868, '198.51.100.9', 3868),
    stale: false,
  },
  {
    name: 'a frontend without endpoints is left alone',
    flow: flow(UDP, '10.96.0.30', 53, '198.51.100.4', 53),
    stale: false,
  },
  {
    name: 'IPv6 flow to a gone endpoint is stale',
    flow: flow(UDP, '2001:db8::a', 53, '2001:db8::4', 53, 'ipv6'),
    stale: true,
  },
  {
    name: 'IPv6 flow to the current endpoint stays',
    flow: flow(UDP, '2001:db8::a', 53, '2001:db8::5', 53, 'ipv6'),
    stale: false,
  },
];

describe('staleConntrackFlows', () => {
  const frontends = [dns, lb, nodePort, sctp, empty, v6];
  it.each(cases)('$name', ({ flow: f, stale }) => {
    expect(staleConntrackFlows([f], frontends)).toEqual(stale ? [f] : []);
  });

  it('keeps the input order and returns only the stale ones', () => {
    const all = cases.map((c) => c.flow);
    expect(staleConntrackFlows(all, frontends)).toEqual(cases.filter((c) => c.stale).map((c) => c.flow));
  });

  it('no frontends, no flows', () => {
    expect(
      staleConntrackFlows(
        cases.map((c) => c.flow),
        [],
      ),
    ).toEqual([]);
  });
});

const dvs = (protocol: number, address: string, port: number, rs: string[], fwmark = 0): DesiredVirtualServer => ({
  vs: { af: address.includes(':') ? 10 : 2, protocol, address, port, fwmark, scheduler: 'rr' },
  realServers: rs.map((r) => ({ af: address.includes(':') ? 10 : 2, address: r, port: 53, weight: 1, fwdMethod: 0 })),
  owner: 'ns/svc:dns/ipv4',
  kind: 'ClusterIP',
});

describe('conntrackFrontends', () => {
  it('UDP and SCTP virtual servers only, with their real servers', () => {
    const got = conntrackFrontends([
      dvs(UDP, '10.96.0.10', 53, ['198.51.100.5']),
      dvs(TCP, '10.96.0.10', 53, ['198.51.100.5']),
      dvs(SCTP, '2001:db8::a', 53, []),
      dvs(0, '', 0, ['198.51.100.5'], 7),
    ]);
    expect(got).toEqual([
      {
        family: 'ipv4',
        protocol: UDP,
        address: '10.96.0.10',
        port: 53,
        endpoints: [{ address: '198.51.100.5', port: 53 }],
      },
      { family: 'ipv6', protocol: SCTP, address: '2001:db8::a', port: 53, endpoints: [] },
    ]);
  });
});

describe('conntrackCleanupTriggers', () => {
  const t = (before: DesiredVirtualServer[], after: DesiredVirtualServer[]) =>
    [...conntrackCleanupTriggers(before, after)].sort();
  it.each([
    {
      name: 'lost an endpoint',
      before: [dvs(UDP, '10.96.0.10', 53, ['198.51.100.4', '198.51.100.5'])],
      after: [dvs(UDP, '10.96.0.10', 53, ['198.51.100.5'])],
      want: ['ipv4/17'],
    },
    {
      name: 'endpoint replaced',
      before: [dvs(UDP, '10.96.0.10', 53, ['198.51.100.4'])],
      after: [dvs(UDP, '10.96.0.10', 53, ['198.51.100.5'])],
      want: ['ipv4/17'],
    },
    {
      name: 'first endpoint',
      before: [dvs(UDP, '10.96.0.10', 53, [])],
      after: [dvs(UDP, '10.96.0.10', 53, ['198.51.100.5'])],
      want: ['ipv4/17'],
    },
    {
      name: 'a new Service with an endpoint (and a restart: everything is new)',
      before: [],
      after: [dvs(UDP, '10.96.0.10', 53, ['198.51.100.5'])],
      want: ['ipv4/17'],
    },
    {
      name: 'a second endpoint added: nothing stale',
      before: [dvs(UDP, '10.96.0.10', 53, ['198.51.100.4'])],
      after: [dvs(UDP, '10.96.0.10', 53, ['198.51.100.4', '198.51.100.5'])],
      want: [],
    },
    {
      name: 'unchanged',
      before: [dvs(UDP, '10.96.0.10', 53, ['198.51.100.4'])],
      after: [dvs(UDP, '10.96.0.10', 53, ['198.51.100.4'])],
      want: [],
    },
    {
      name: 'lost its last endpoint: nothing to clean until the next one comes',
      before: [dvs(UDP, '10.96.0.10', 53, ['198.51.100.4'])],
      after: [dvs(UDP, '10.96.0.10', 53, [])],
      want: [],
    },
    {
      name: 'the Service went away: no frontend left to clean',
      before: [dvs(UDP, '10.96.0.10', 53, ['198.51.100.4'])],
      after: [],
      want: [],
    },
    {
      name: 'TCP endpoint change is not a trigger',
      before: [dvs(TCP, '10.96.0.10', 80, ['198.51.100.4'])],
      after: [dvs(TCP, '10.96.0.10', 80, ['198.51.100.5'])],
      want: [],
    },
    {
      name: 'SCTP and IPv6 UDP',
      before: [dvs(SCTP, '10.96.0.20', 3868, ['198.51.100.4']), dvs(UDP, '2001:db8::a', 53, ['2001:db8::4'])],
      after: [dvs(SCTP, '10.96.0.20', 3868, ['198.51.100.5']), dvs(UDP, '2001:db8::a', 53, ['2001:db8::5'])],
      want: ['ipv4/132', 'ipv6/17'],
    },
  ])('$name', ({ before, after, want }) => {
    expect(t(before, after)).toEqual(want);
  });
});
