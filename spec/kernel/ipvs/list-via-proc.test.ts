// listAllViaProc over the in-memory fake, with /proc/net/ip_vs text printed from the fake's
// table the way the kernel prints it (testkit/proc-ip-vs-text.ts): the result must be what
// the netlink-only listing gives, with a dest dump only where /proc cannot stand for a service.
import { FakeIpvs } from '../../../testkit/kernel/fake-ipvs';
import { IpvsOp } from '../../../lib/kernel/ipvs/ipvs';
import { listAllViaProc } from '../../../lib/kernel/ipvs/list-via-proc';
import { VirtualServerId } from '../../../lib/model/ipvs';
import { AF_INET, AF_INET6, IPPROTO_TCP, IPPROTO_UDP } from '../../../lib/uapi/inet';
import { IP_VS_CONN_F, IP_VS_SVC_F } from '../../../lib/uapi/ip_vs';
import { procIpVsText } from '../../../testkit/proc-ip-vs-text';

const tcp = (address: string, port: number): VirtualServerId => ({
  af: address.includes(':') ? AF_INET6 : AF_INET,
  protocol: IPPROTO_TCP,
  address,
  port,
  fwmark: 0,
});
const fwm = (mark: number, af: typeof AF_INET | typeof AF_INET6): VirtualServerId => ({
  af,
  protocol: 0,
  address: '',
  port: 0,
  fwmark: mark,
});

const TABLE: IpvsOp[] = [
  { kind: 'newService', vs: { ...tcp('10.0.0.1', 80), scheduler: 'rr' } },
  {
    kind: 'newDest',
    vs: tcp('10.0.0.1', 80),
    rs: { af: AF_INET, address: '10.1.0.1', port: 8080, fwdMethod: IP_VS_CONN_F.MASQ, weight: 3 },
  },
  {
    kind: 'newDest',
    vs: tcp('10.0.0.1', 80),
    rs: { af: AF_INET, address: '10.1.0.2', port: 80, fwdMethod: IP_VS_CONN_F.DROUTE, weight: 0 },
  },
  {
    kind: 'newDest',
    vs: tcp('10.0.0.1', 80),
    rs: { af: AF_INET, address: '10.1.0.3', port: 80, fwdMethod: IP_VS_CONN_F.LOCALNODE, weight: 1 },
  },
  {
    kind: 'newService',
    vs: {
      ...tcp('2001:db8::1', 443),
      scheduler: 'sh',
      flags: IP_VS_SVC_F.PERSISTENT | IP_VS_SVC_F.SCHED1,
      timeout: 300,
      netmask: 64,
    },
  },
  {
    kind: 'newDest',
    vs: tcp('2001:db8::1', 443),
    rs: { af: AF_INET6, address: '2001:db8::10', port: 8443, fwdMethod: IP_VS_CONN_F.MASQ, weight: 1 },
  },
  {
    kind: 'newService',
    vs: {
      af: AF_INET,
      protocol: IPPROTO_UDP,
      address: '10.0.0.2',
      port: 53,
      fwmark: 0,
      scheduler: 'wrr',
      flags: IP_VS_SVC_F.ONEPACKET,
    },
  },
  { kind: 'newService', vs: { ...fwm(9, AF_INET), scheduler: 'rr' } },
  {
    kind: 'newDest',
    vs: fwm(9, AF_INET),
    rs: { af: AF_INET, address: '10.2.0.9', port: 0, fwdMethod: IP_VS_CONN_F.DROUTE, weight: 1 },
  },
];

async function table(ops: readonly IpvsOp[] = TABLE): Promise<FakeIpvs> {
  const ipvs = new FakeIpvs();
  const results = await ipvs.run(ops);
  expect(results.every((r) => r.ok)).toBe(true);
  return ipvs;
}

const procOf = async (ipvs: FakeIpvs): Promise<string> => procIpVsText(await ipvs.listAll());

/** the fake counting dest dumps */
function counting(ipvs: FakeIpvs): { ipvs: FakeIpvs; dumps: () => number } {
  let n = 0;
  const orig = ipvs.listRealServers.bind(ipvs);
  ipvs.listRealServers = async (id) => {
    n++;
    return orig(id);
  };
  return { ipvs, dumps: () => n };
}

describe('listAllViaProc', () => {
  it('gives the netlink listing with no dest dump at all', async () => {
    const ipvs = await table();
    const text = await procOf(ipvs);
    const c = counting(ipvs);
    const r = await listAllViaProc(c.ipvs, async () => text, { tunnelDetails: false });
    expect(r).toEqual({ info: await ipvs.info(), entries: await ipvs.listAll(), source: 'proc', destDumps: 0 });
    expect(c.dumps()).toBe(0);
  });

  it('a fwmark shared by an IPv4 and an IPv6 service (/proc cannot tell them apart): both dumped', async () => {
    const ipvs = await table([
      ...TABLE,
      { kind: 'newService', vs: { ...fwm(9, AF_INET6), scheduler: 'rr' } },
      {
        kind: 'newDest',
        vs: fwm(9, AF_INET6),
        rs: { af: AF_INET6, address: 'fd00::9', port: 0, fwdMethod: IP_VS_CONN_F.MASQ, weight: 1 },
      },
    ]);
    const text = await procOf(ipvs);
    const r = await listAllViaProc(ipvs, async () => text, { tunnelDetails: false });
    expect(r.entries).toEqual(await ipvs.listAll());
    expect(r.destDumps).toBe(2);
  });

  it('tunnel real servers: from /proc for a plain listing, dumped when the listing shows tunnel details', async () => {
    const ipvs = await table([
      ...TABLE,
      {
        kind: 'newDest',
        vs: tcp('10.0.0.1', 80),
        rs: {
          af: AF_INET,
          address: '10.1.0.4',
          port: 80,
          fwdMethod: IP_VS_CONN_F.TUNNEL,
          weight: 1,
          tunType: 1,
          tunPort: 6080,
          tunFlags: 1,
        },
      },
    ]);
    const text = await procOf(ipvs);
    const plain = await listAllViaProc(ipvs, async () => text, { tunnelDetails: false });
    expect(plain.destDumps).toBe(0);
    expect(plain.entries[0]!.dests.find((d) => d.address === '10.1.0.4')).toMatchObject({
      fwdMethod: IP_VS_CONN_F.TUNNEL,
      tunType: 0,
      tunPort: 0,
    });
    const detailed = await listAllViaProc(ipvs, async () => text, { tunnelDetails: true });
    expect(detailed.destDumps).toBe(1);
    expect(detailed.entries).toEqual(await ipvs.listAll());
  });

  it('the table changed between the reads: a service missing from /proc or with another scheduler is dumped, one only in /proc is not listed', async () => {
    const ipvs = await table();
    const before = await procOf(ipvs);
    await ipvs.run([
      { kind: 'newService', vs: { ...tcp('10.0.0.3', 80), scheduler: 'rr' } },
      {
        kind: 'newDest',
        vs: tcp('10.0.0.3', 80),
        rs: { af: AF_INET, address: '10.3.0.1', port: 80, fwdMethod: IP_VS_CONN_F.MASQ, weight: 1 },
      },
      { kind: 'setService', vs: { ...tcp('10.0.0.1', 80), scheduler: 'wlc' } },
      { kind: 'delService', vs: { ...fwm(9, AF_INET) } },
    ]);
    const r = await listAllViaProc(ipvs, async () => before, { tunnelDetails: false });
    expect(r.entries).toEqual(await ipvs.listAll());
    expect(r.destDumps).toBe(2);
  });

  it('/proc in another order than the dump: each service still gets its own real servers, by key, with no dest dump', async () => {
    // the same protocol and port on two addresses, so a match by position alone would swap them
    const ipvs = await table([
      ...TABLE,
      { kind: 'newService', vs: { ...tcp('10.0.0.3', 80), scheduler: 'rr' } },
      {
        kind: 'newDest',
        vs: tcp('10.0.0.3', 80),
        rs: { af: AF_INET, address: '10.3.0.1', port: 80, fwdMethod: IP_VS_CONN_F.MASQ, weight: 1 },
      },
    ]);
    const entries = await ipvs.listAll();
    const c = counting(ipvs);
    const r = await listAllViaProc(c.ipvs, async () => procIpVsText([...entries].reverse()), { tunnelDetails: false });
    expect(r.entries).toEqual(entries);
    expect(c.dumps()).toBe(0);
    expect(r.destDumps).toBe(0);
  });

  it.each([
    ['cannot be read', async () => Promise.reject(new Error('ENOENT'))],
    ['does not parse', async () => 'IP Virtual Server version 9\n'],
  ])('/proc/net/ip_vs %s: everything from netlink', async (_what, readProc) => {
    const ipvs = await table();
    const r = await listAllViaProc(ipvs, readProc, { tunnelDetails: false });
    expect(r).toEqual({ info: await ipvs.info(), entries: await ipvs.listAll(), source: 'netlink', destDumps: 4 });
  });
});
