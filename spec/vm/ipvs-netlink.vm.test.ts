// Runs inside the QEMU VM (real kernel with ip_vs). Compares our client with the kernel
// and with the real ipvsadm 1.31 binary. Addresses: RFC 5737 / RFC 3849 ranges.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { IpvsNetlink, openIpvs, resolveIpvsFamily } from '../../lib/kernel/ipvs/ipvs-netlink';
import { GenlSocket, RawTransport } from '../../lib/netlink/socket';
import { AttrWriter } from '../../lib/netlink/attr';
import { IPVS_CMD, IPVS_CMD_ATTR, IPVS_GENL_VERSION } from '../../lib/uapi/ip_vs';
import { IpvsOp } from '../../lib/kernel/ipvs/ipvs';
import { FakeIpvs } from '../../testkit/kernel/fake-ipvs';
import { NetlinkError, isExists, isNotFound } from '../../lib/errors';
import { VirtualServerId } from '../../lib/model/ipvs';
import { ProcIpVsBlocks, parseProcIpVs } from '../../lib/kernel/ipvs/parse-proc-ip-vs';

const E = osConstants.errno;
const ipvsadm = (...args: string[]): string => execFileSync('ipvsadm', args, { encoding: 'utf8' });
const tcp = (address: string, port: number): VirtualServerId => ({ af: 2, protocol: 6, address, port, fwmark: 0 });
const rs = (address: string, port: number, weight = 1, fwdMethod = 0) => ({
  af: 2 as const,
  address,
  port,
  weight,
  fwdMethod,
});

let ipvs: IpvsNetlink;
beforeAll(async () => {
  ipvs = await openIpvs();
});
afterAll(() => ipvs.close());
beforeEach(() => ipvsadm('-C'));

describe('IPVS over generic netlink, against the kernel and ipvsadm', () => {
  it('programs services of every kind that ipvsadm -Sn then lists', async () => {
    const vs4 = tcp('192.0.2.10', 80);
    const v6 = { af: 10 as const, protocol: 17, address: '2001:db8::53', port: 53, fwmark: 0 };
    const sctp = { af: 2 as const, protocol: 132, address: '192.0.2.11', port: 3868, fwmark: 0 };
    const fwm = { af: 2 as const, protocol: 0, address: '', port: 0, fwmark: 7 };
    const fwm6 = { af: 10 as const, protocol: 0, address: '', port: 0, fwmark: 8 };
    const results = await ipvs.run([
      { kind: 'newService', vs: { ...vs4, scheduler: 'wrr', flags: 1, timeout: 600, netmask: 0xffffff00 } },
      { kind: 'newDest', vs: vs4, rs: rs('198.51.100.1', 8080, 3, 0) },
      { kind: 'newDest', vs: vs4, rs: { ...rs('198.51.100.2', 8080, 0, 3), uThreshold: 100, lThreshold: 10 } },
      { kind: 'newDest', vs: vs4, rs: rs('198.51.100.3', 8080, 1, 2) },
      { kind: 'newService', vs: { ...v6, scheduler: 'sh', flags: 0x8 | 0x10 } },
      { kind: 'newDest', vs: v6, rs: { af: 10, address: '2001:db8::1:5', port: 5353, weight: 2, fwdMethod: 0 } },
      { kind: 'newService', vs: { ...sctp, scheduler: 'mh', flags: 0x10 } },
      { kind: 'newService', vs: { ...fwm, scheduler: 'lc', flags: 0x4 } },
      { kind: 'newService', vs: { ...fwm6, scheduler: 'rr', flags: 1, timeout: 300, netmask: 64 } },
    ]);
    expect(results.filter((r) => !r.ok)).toEqual([]);
    const saved = ipvsadm('-Sn').split('\n').filter(Boolean).sort();
    expect(saved).toEqual(
      [
        '-A -t 192.0.2.10:80 -s wrr -p 600 -M 255.255.255.0',
        '-a -t 192.0.2.10:80 -r 198.51.100.1:8080 -m -w 3',
        '-a -t 192.0.2.10:80 -r 198.51.100.2:8080 -g -w 0',
        '-a -t 192.0.2.10:80 -r 198.51.100.3:8080 -i -w 1 --tun-type ipip',
        '-A -u [2001:db8::53]:53 -s sh -b sh-fallback,sh-port',
        '-a -u [2001:db8::53]:53 -r [2001:db8::1:5]:5353 -m -w 2',
        '-A --sctp-service 192.0.2.11:3868 -s mh -b mh-port',
        '-A -f 7 -s lc -o',
        '-A -f 8 -6 -s rr -p 300 -M 64',
      ].sort(),
    );
    // and we read back exactly what ipvsadm shows
    const all = await ipvs.listAll();
    expect(all).toHaveLength(5);
    const web = all.find((e) => e.vs.port === 80)!;
    expect(web.vs).toMatchObject({ scheduler: 'wrr', flags: 1, timeout: 600, netmask: 0xffffff00 });
    expect(web.dests.map((d) => [d.address, d.weight, d.fwdMethod, d.uThreshold, d.lThreshold]).sort()).toEqual([
      ['198.51.100.1', 3, 0, 0, 0],
      ['198.51.100.2', 0, 3, 100, 10],
      ['198.51.100.3', 1, 2, 0, 0],
    ]);
    const six = all.find((e) => e.vs.fwmark === 8)!;
    expect(six.vs).toMatchObject({ af: 10, netmask: 64, timeout: 300 });
  });

  it('reads what ipvsadm wrote, including thresholds, tunnels and persistence engines', async () => {
    ipvsadm('-A', '-u', '192.0.2.20:5060', '-s', 'rr', '-p', '30', '--pe', 'sip');
    ipvsadm(
      '-a',
      '-u',
      '192.0.2.20:5060',
      '-r',
      '198.51.100.9:5060',
      '-i',
      '-w',
      '4',
      '-x',
      '50',
      '-y',
      '5',
      '--tun-type',
      'gue',
      '--tun-port',
      '6080',
      '--tun-csum',
    );
    const [entry] = await ipvs.listAll();
    expect(entry!.vs).toMatchObject({
      protocol: 17,
      address: '192.0.2.20',
      port: 5060,
      peName: 'sip',
      flags: 1,
      timeout: 30,
    });
    expect(entry!.dests[0]).toMatchObject({
      address: '198.51.100.9',
      weight: 4,
      uThreshold: 50,
      lThreshold: 5,
      fwdMethod: 2,
      tunType: 1,
      tunPort: 6080,
      tunFlags: 1,
    });
  });

  it('edits in place (SET_SERVICE / SET_DEST) and deletes', async () => {
    const vs = tcp('192.0.2.30', 443);
    await ipvs.apply({ kind: 'newService', vs: { ...vs, scheduler: 'rr' } });
    await ipvs.apply({ kind: 'newDest', vs, rs: rs('198.51.100.1', 443) });
    await ipvs.apply({ kind: 'setService', vs: { ...vs, scheduler: 'lc', flags: 1, timeout: 10800 } });
    await ipvs.apply({ kind: 'setDest', vs, rs: rs('198.51.100.1', 443, 0) });
    expect(ipvsadm('-Sn')).toBe(
      '-A -t 192.0.2.30:443 -s lc -p 10800\n-a -t 192.0.2.30:443 -r 198.51.100.1:443 -m -w 0\n',
    );
    await ipvs.apply({ kind: 'delDest', vs, rs: rs('198.51.100.1', 443) });
    expect(await ipvs.listRealServers(vs)).toEqual([]);
    await ipvs.apply({ kind: 'delService', vs });
    expect(ipvsadm('-Sn')).toBe('');
  });

  it('GET_INFO, GET_CONFIG/SET_CONFIG, ZERO and FLUSH agree with ipvsadm', async () => {
    const info = await ipvs.info();
    expect(ipvsadm('-Ln').split('\n')[0]).toBe(
      `IP Virtual Server version 1.2.${info.version & 0xff} (size=${info.connTabSize})`,
    );
    const before = await ipvs.timeouts();
    expect(ipvsadm('-L', '--timeout').trim()).toBe(
      `Timeout (tcp tcpfin udp): ${before.tcp} ${before.tcpFin} ${before.udp}`,
    );
    await ipvs.apply({ kind: 'setConfig', timeouts: { tcp: 1000, tcpFin: 0, udp: 77 } });
    expect(await ipvs.timeouts()).toEqual({ tcp: 1000, tcpFin: before.tcpFin, udp: 77 });
    await ipvs.apply({ kind: 'setConfig', timeouts: before });
    const vs = tcp('192.0.2.40', 80);
    await ipvs.apply({ kind: 'newService', vs: { ...vs, scheduler: 'rr' } });
    await ipvs.apply({ kind: 'zero', vs });
    await ipvs.apply({ kind: 'zero' });
    await ipvs.apply({ kind: 'flush' });
    expect(await ipvs.listServices()).toEqual([]);
  });

  it('a GET with its reply and ack never confuses the next request', async () => {
    const vs = tcp('192.0.2.50', 80);
    await ipvs.apply({ kind: 'newService', vs: { ...vs, scheduler: 'rr' } });
    for (let i = 0; i < 50; i++) {
      const [got, del] = await Promise.allSettled([
        ipvs.getService(vs),
        ipvs.apply({ kind: 'delService', vs: tcp('192.0.2.51', i + 1) }),
      ]);
      expect(got.status).toBe('fulfilled');
      expect(del.status).toBe('rejected');
      expect((del as PromiseRejectedResult).reason.errno).toBe(E.ESRCH);
    }
  });

  it('a burst of 2,000 concurrent requests all complete (no receive-buffer overrun)', async () => {
    const vs = tcp('192.0.2.55', 80);
    await ipvs.apply({ kind: 'newService', vs: { ...vs, scheduler: 'rr' } });
    const got = await Promise.all(Array.from({ length: 2000 }, (_, i) => (i % 2 ? ipvs.info() : ipvs.getService(vs))));
    expect(got.filter((g) => 'connTabSize' in g)).toHaveLength(1000);
    expect(got.filter((g) => 'scheduler' in g && g.scheduler === 'rr')).toHaveLength(1000);
  });

  it('names the op, the object and the errno in every kernel refusal', async () => {
    const vs = tcp('192.0.2.60', 80);
    await ipvs.apply({ kind: 'newService', vs: { ...vs, scheduler: 'rr' } });
    const refusal = async (op: IpvsOp): Promise<NetlinkError> => {
      try {
        await ipvs.apply(op);
      } catch (e) {
        return e as NetlinkError;
      }
      throw new Error('expected a refusal');
    };
    const eexist = await refusal({ kind: 'newService', vs: { ...vs, scheduler: 'rr' } });
    expect(eexist.message).toBe('add virtual server TCP 192.0.2.60:80: virtual server already exists (EEXIST)');
    expect(isExists(eexist)).toBe(true);
    const esrch = await refusal({ kind: 'delService', vs: tcp('192.0.2.61', 80) });
    expect([esrch.errno, esrch.message]).toEqual([
      E.ESRCH,
      'delete virtual server TCP 192.0.2.61:80: no such virtual server (ESRCH)',
    ]);
    expect(isNotFound(esrch)).toBe(true);
    const sched = await refusal({ kind: 'newService', vs: { ...tcp('10.96.0.10', 80), scheduler: 'foo' } });
    expect(sched.message).toBe("add virtual server TCP 10.96.0.10:80: scheduler 'foo' not available (ENOENT)");
    const nodest = await refusal({ kind: 'delDest', vs, rs: rs('198.51.100.1', 80) });
    expect([nodest.errno, nodest.message]).toEqual([
      E.ENOENT,
      'delete real server 198.51.100.1:80 of TCP 192.0.2.60:80: no such real server (ENOENT)',
    ]);
    const einval = await refusal({
      kind: 'newService',
      vs: { af: 10, protocol: 6, address: '2001:db8::1', port: 80, fwmark: 0, scheduler: 'rr', flags: 1, netmask: 0 },
    });
    expect(einval.errno).toBe(E.EINVAL);
    const mcast = await refusal({ kind: 'newDest', vs, rs: rs('224.0.0.1', 80) });
    expect(mcast.errno).toBe(E.EINVAL);
    // nothing that was refused changed the table
    expect(ipvsadm('-Sn')).toBe('-A -t 192.0.2.60:80 -s rr\n');
  });

  it("NETLINK_EXT_ACK: a malformed attribute is refused with the kernel's policy message", async () => {
    // IPVS_CMD_SET_CONFIG with IPVS_CMD_ATTR_TIMEOUT_TCP (NLA_U32) two bytes long
    const sock = new GenlSocket(new RawTransport(), await resolveIpvsFamily(), IPVS_GENL_VERSION, {
      requestTimeoutMs: 5000,
    });
    try {
      const attrs = new AttrWriter().bytes(IPVS_CMD_ATTR.TIMEOUT_TCP, Buffer.from([1, 0])).finish();
      const e = await sock.request({ cmd: IPVS_CMD.SET_CONFIG, attrs }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(e).toEqual({ errno: E.ERANGE, extack: 'Attribute failed policy validation' });
    } finally {
      sock.close();
    }
    // nothing changed: the TCP timeout is still the kernel's default
    expect(ipvsadm('-L', '--timeout')).toMatch(/^Timeout \(tcp tcpfin udp\): 900 120 300/);
  });

  it('EPERM without CAP_NET_ADMIN', () => {
    const script = `
      const { openIpvs } = require(${JSON.stringify(require.resolve('../../lib/kernel/ipvs/ipvs-netlink'))});
      openIpvs().then(async (c) => {
        try { await c.apply({ kind: 'flush' }); console.log('ok'); }
        catch (e) { console.log(e.errnoName + ' ' + e.message); }
        finally { c.close(); }
      }, (e) => console.log('open failed: ' + e.message));`;
    const r = spawnSync(
      'setpriv',
      ['--reuid=65534', '--regid=65534', '--clear-groups', '--inh-caps=-all', process.execPath, '-e', script],
      { encoding: 'utf8' },
    );
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe(
      'EPERM flush the IPVS table: operation not permitted (needs CAP_NET_ADMIN in the network namespace) (EPERM)',
    );
  });

  it('a failing op in the middle of a batch fails alone; the ops after it still run', async () => {
    const vs = tcp('192.0.2.70', 80);
    const ops: IpvsOp[] = [{ kind: 'newService', vs: { ...vs, scheduler: 'rr' } }];
    for (let i = 1; i <= 600; i++) ops.push({ kind: 'newDest', vs, rs: rs(`198.51.${100 + (i >> 8)}.${i & 255}`, 80) });
    ops.splice(300, 0, { kind: 'newDest', vs, rs: rs('198.51.100.5', 80) }); // duplicate of op 5
    ops.push({ kind: 'delDest', vs, rs: rs('203.0.113.1', 80) }); // missing
    const results = await ipvs.run(ops);
    const failed = results.flatMap((r, i) => (r.ok ? [] : [[i, r.error.errnoName, r.error.opIndex]]));
    expect(failed).toEqual([
      [300, 'EEXIST', 300],
      [ops.length - 1, 'ENOENT', ops.length - 1],
    ]);
    expect((await ipvs.listRealServers(vs)).length).toBe(600);
  });

  it('an observer dumping beside listAll does not collide with it (the kernel allows one dump per socket)', async () => {
    // 500 services: each dump spans several datagrams, so a dump is still running on the
    // socket when the next one is asked for
    const ops: IpvsOp[] = [];
    for (let i = 0; i < 500; i++) {
      const vs = tcp(`10.99.${i >> 8}.${i & 255}`, 80);
      ops.push({ kind: 'newService', vs: { ...vs, scheduler: 'rr' } });
      ops.push({ kind: 'newDest', vs, rs: rs(`172.17.${i >> 8}.${i & 255}`, 8080) });
    }
    expect((await ipvs.run(ops)).every((r) => r.ok)).toBe(true);
    const [all, services, again, dests] = await Promise.all([
      ipvs.listAll(),
      ipvs.listServices(),
      ipvs.listServices(),
      ipvs.listRealServers(tcp('10.99.0.7', 80)),
    ]);
    expect(all).toHaveLength(500);
    expect(all.every((e) => e.dests.length === 1)).toBe(true);
    expect(services).toHaveLength(500);
    expect(again).toHaveLength(500);
    expect(dests.map((d) => d.address)).toEqual(['172.17.0.7']);
  });

  it('dumps 10,000 services (a multi-part dump) completely and correctly', async () => {
    const ops: IpvsOp[] = [];
    for (let i = 0; i < 10_000; i++) {
      const vs = tcp(`10.${100 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`, 80 + (i % 3));
      ops.push({ kind: 'newService', vs: { ...vs, scheduler: 'rr' } });
      ops.push({ kind: 'newDest', vs, rs: rs(`172.16.${(i >> 8) & 255}.${i & 255}`, 8080, 1 + (i % 5)) });
    }
    const results = await ipvs.run(ops);
    expect(results.every((r) => r.ok)).toBe(true);
    const all = await ipvs.listAll();
    expect(all).toHaveLength(10_000);
    const got = all
      .map((e) => `${e.vs.address}:${e.vs.port}>${e.dests.map((d) => `${d.address}/${d.weight}`).join(',')}`)
      .sort();
    const want = ipvsadm('-Sn')
      .split('\n')
      .filter((l) => l.startsWith('-a'))
      .map((l) => {
        const m = /^-a -t (\S+) -r (\S+):8080 -m -w (\d+)$/.exec(l)!;
        return `${m[1]}>${m[2]}/${m[3]}`;
      })
      .sort();
    expect(got).toEqual(want);
  });
});

describe.each([
  ['fake', async () => new FakeIpvs()],
  ['kernel', async () => openIpvs()],
])('the %s refuses misuse with the kernel errno', (_name, open) => {
  const vs = tcp('192.0.2.80', 80);
  const cases: [string, IpvsOp[], string][] = [
    ['duplicate service', [{ kind: 'newService', vs: { ...vs, scheduler: 'rr' } }], 'EEXIST'],
    ['edit a missing service', [{ kind: 'setService', vs: { ...tcp('192.0.2.81', 80), scheduler: 'rr' } }], 'ESRCH'],
    ['delete a missing service', [{ kind: 'delService', vs: tcp('192.0.2.81', 80) }], 'ESRCH'],
    ['unknown scheduler', [{ kind: 'newService', vs: { ...tcp('192.0.2.82', 80), scheduler: 'nope' } }], 'ENOENT'],
    [
      'unknown persistence engine',
      [{ kind: 'newService', vs: { ...tcp('192.0.2.82', 80), scheduler: 'rr', flags: 1, peName: 'nope' } }],
      'ENOENT',
    ],
    ['scheduler change to an unknown one', [{ kind: 'setService', vs: { ...vs, scheduler: 'nope' } }], 'ENOENT'],
    [
      'IPv6 prefix length 0',
      [
        {
          kind: 'newService',
          vs: { af: 10, protocol: 6, address: '2001:db8::2', port: 1, fwmark: 0, scheduler: 'rr', netmask: 0 },
        },
      ],
      'EINVAL',
    ],
    [
      'IPv6 prefix length 129',
      [
        {
          kind: 'newService',
          vs: { af: 10, protocol: 6, address: '2001:db8::2', port: 1, fwmark: 0, scheduler: 'rr', netmask: 129 },
        },
      ],
      'EINVAL',
    ],
    ['duplicate real server', [{ kind: 'newDest', vs, rs: rs('198.51.100.1', 80) }], 'EEXIST'],
    [
      'real server for a missing service',
      [{ kind: 'newDest', vs: tcp('192.0.2.81', 80), rs: rs('198.51.100.1', 80) }],
      'ESRCH',
    ],
    ['edit a missing real server', [{ kind: 'setDest', vs, rs: rs('198.51.100.2', 80) }], 'ENOENT'],
    ['delete a missing real server', [{ kind: 'delDest', vs, rs: rs('198.51.100.2', 80) }], 'ENOENT'],
    ['multicast real server', [{ kind: 'newDest', vs, rs: rs('239.1.1.1', 80) }], 'EINVAL'],
    ['unspecified real server', [{ kind: 'newDest', vs, rs: rs('0.0.0.0', 80) }], 'EINVAL'],
    [
      'IPv6 real server under IPv4 masq',
      [{ kind: 'newDest', vs, rs: { af: 10, address: '2001:db8::9', port: 80, weight: 1, fwdMethod: 0 } }],
      'EINVAL',
    ],
    [
      'lower threshold above upper',
      [{ kind: 'newDest', vs, rs: { ...rs('198.51.100.3', 80), uThreshold: 5, lThreshold: 10 } }],
      'ERANGE',
    ],
    ['negative weight', [{ kind: 'newDest', vs, rs: rs('198.51.100.3', 80, 0x80000000) }], 'ERANGE'],
    [
      'GUE tunnel without a port',
      [{ kind: 'newDest', vs, rs: { ...rs('198.51.100.3', 80, 1, 2), tunType: 1 } }],
      'EINVAL',
    ],
    ['zero a missing service', [{ kind: 'zero', vs: tcp('192.0.2.81', 80) }], 'ESRCH'],
  ];

  it.each(cases)('%s', async (_case, ops, errnoName) => {
    const c = await open();
    try {
      await c.apply({ kind: 'flush' });
      await c.apply({ kind: 'newService', vs: { ...vs, scheduler: 'rr' } });
      await c.apply({ kind: 'newDest', vs, rs: rs('198.51.100.1', 80) });
      const results = await c.run(ops);
      expect(results.map((r) => (r.ok ? 'ok' : r.error.errnoName))).toEqual([errnoName]);
      // and the healthy table is untouched
      const all = await c.listAll();
      expect(all.map((e) => [e.vs.address, e.vs.scheduler, e.dests.map((d) => d.address)])).toEqual([
        ['192.0.2.80', 'rr', ['198.51.100.1']],
      ]);
    } finally {
      await c.apply({ kind: 'flush' });
      c.close();
    }
  });
});

describe('fake and kernel objects', () => {
  it('spread and JSON the same for the same table (counters only through `stats`)', async () => {
    const vs = tcp('192.0.2.90', 80);
    const v6 = { af: 10 as const, protocol: 17, address: '2001:db8::90', port: 53, fwmark: 0 };
    const ops: IpvsOp[] = [
      { kind: 'newService', vs: { ...vs, scheduler: 'wrr', flags: 1, timeout: 300 } },
      { kind: 'newDest', vs, rs: { ...rs('198.51.100.90', 8080, 3, 2), uThreshold: 10, lThreshold: 1 } },
      { kind: 'newService', vs: { ...v6, scheduler: 'sh' } },
      { kind: 'newDest', vs: v6, rs: { af: 10, address: '2001:db8::1:90', port: 53, weight: 1, fwdMethod: 0 } },
    ];
    const fake = new FakeIpvs();
    expect((await fake.run(ops)).every((r) => r.ok)).toBe(true);
    expect((await ipvs.run(ops)).every((r) => r.ok)).toBe(true);
    const json = (x: unknown) => JSON.stringify(x, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));
    const byAddress = (a: { vs: { address: string } }, b: { vs: { address: string } }) =>
      a.vs.address < b.vs.address ? -1 : 1;
    const fromFake = (await fake.listAll()).sort(byAddress);
    const fromKernel = (await ipvs.listAll()).sort(byAddress);
    expect(json(fromKernel)).toBe(json(fromFake));
    expect(fromKernel.map((e) => [{ ...e.vs }, e.dests.map((d) => ({ ...d }))])).toEqual(
      fromFake.map((e) => [{ ...e.vs }, e.dests.map((d) => ({ ...d }))]),
    );
    for (const e of [...fromFake, ...fromKernel]) {
      expect(e.vs.stats?.conns).toBe(0n);
      expect('stats' in { ...e.vs }).toBe(false);
    }
  });
});

describe('a table read again (the full sync every syncPeriod) against the kernel', () => {
  it('a quiet kernel answers the same bytes: the same service objects and /proc blocks; an edit by ipvsadm is read anew', async () => {
    const a = tcp('192.0.2.201', 80);
    const b = tcp('192.0.2.202', 80);
    await ipvs.run([
      { kind: 'newService', vs: { ...a, scheduler: 'rr', flags: 0, timeout: 0, netmask: 0xffffffff, peName: '' } },
      { kind: 'newService', vs: { ...b, scheduler: 'rr', flags: 0, timeout: 0, netmask: 0xffffffff, peName: '' } },
      { kind: 'newDest', vs: a, rs: rs('198.51.100.1', 8080) },
      { kind: 'newDest', vs: b, rs: rs('198.51.100.2', 8080) },
    ]);
    const key = (vs: { address: string }) => vs.address;
    const first = new Map((await ipvs.listServices()).map((vs) => [key(vs), vs]));
    const again = new Map((await ipvs.listServices()).map((vs) => [key(vs), vs]));
    expect(again.get('192.0.2.201')).toBe(first.get('192.0.2.201'));
    expect(again.get('192.0.2.202')).toBe(first.get('192.0.2.202'));
    const blocks = new ProcIpVsBlocks();
    const proc1 = parseProcIpVs(readFileSync('/proc/net/ip_vs', 'utf8'), blocks);
    const proc2 = parseProcIpVs(readFileSync('/proc/net/ip_vs', 'utf8'), blocks);
    proc2.services.forEach((s, i) => expect(s).toBe(proc1.services[i]));

    // an independent writer changes one service's scheduler and the other's real server weight
    ipvsadm('-E', '-t', '192.0.2.201:80', '-s', 'wlc');
    ipvsadm('-e', '-t', '192.0.2.202:80', '-r', '198.51.100.2:8080', '-m', '-w', '7');
    const edited = new Map((await ipvs.listServices()).map((vs) => [key(vs), vs]));
    expect(edited.get('192.0.2.201')!.scheduler).toBe('wlc');
    expect(edited.get('192.0.2.202')).toBe(first.get('192.0.2.202'));
    const proc3 = parseProcIpVs(readFileSync('/proc/net/ip_vs', 'utf8'), blocks);
    expect(proc3).toEqual(parseProcIpVs(readFileSync('/proc/net/ip_vs', 'utf8')));
    const weightOf = (t: typeof proc3) => t.services.find((s) => s.address === '192.0.2.202')!.dests[0]!.weight;
    expect(weightOf(proc3)).toBe(7);
    const unchanged = proc3.services.find((s) => s.address === '192.0.2.201');
    expect(unchanged?.scheduler).toBe('wlc');
  });
});
