// Runs inside the QEMU VM: /proc/net/ip_vs as the daemon's full check and the CLI's listings
// read it (readProcText, blocking reads into one buffer, in slices), on a table far larger than the one
// page the kernel's seq_file hands out per read(), against `cat` and the netlink dump.
// guest-jest: alone — IPVS keeps one service hash table for every namespace: with another
// file's virtual servers changing beside it, a read across pages skipped some of this
// namespace's (seen with two lanes: 2 of 300 missing).
import { execFileSync } from 'node:child_process';
import { openIpvs, IpvsNetlink } from '../../lib/kernel/ipvs/ipvs-netlink';
import { IpvsOp } from '../../lib/kernel/ipvs/ipvs';
import { procTextReader, readProcText } from '../../lib/kernel/ipvs/read-proc-ip-vs';
import { parseProcIpVs } from '../../lib/kernel/ipvs/parse-proc-ip-vs';
import { matchProcServices } from '../../lib/kernel/ipvs/list-via-proc';
import { formatIPv4 } from '../../lib/model/ipvs';

const SERVICES = 300;
const DESTS = 10;

let ipvs: IpvsNetlink;
beforeAll(async () => {
  ipvs = await openIpvs();
  execFileSync('ipvsadm', ['-C']);
  const ops: IpvsOp[] = [];
  for (let i = 0; i < SERVICES; i++) {
    const vs = { af: 2 as const, protocol: 6, address: formatIPv4(0xc6120000 + i), port: 80, fwmark: 0 }; // 198.18.0.0/15
    ops.push({ kind: 'newService', vs: { ...vs, scheduler: 'rr' } });
    for (let j = 0; j < DESTS; j++)
      ops.push({
        kind: 'newDest',
        vs,
        rs: { af: 2, address: formatIPv4(0xc6130000 + i * DESTS + j), port: 8080, weight: 1 + j, fwdMethod: 0 },
      });
  }
  const results = await ipvs.run(ops);
  expect(results.filter((r) => !r.ok)).toEqual([]);
});
afterAll(() => {
  execFileSync('ipvsadm', ['-C']);
  ipvs.close();
});

describe('readProcText on the kernel /proc/net/ip_vs', () => {
  it('reads the whole file, many pages long, byte for byte as cat does, in one slice or in slices of one read', async () => {
    const cat = execFileSync('cat', ['/proc/net/ip_vs'], { encoding: 'latin1', maxBuffer: 64 << 20 });
    expect(cat.length).toBeGreaterThan(16 * 4096);
    // a first buffer of one page: the read loop must grow it many times over
    expect(await readProcText(undefined, 4096)).toBe(cat);
    expect(await readProcText()).toBe(cat);
    expect(await readProcText(undefined, 4096, 0)).toBe(cat);
  });

  // the daemon's full sync reads through procTextReader: each buffer sized from the last read
  it('procTextReader: read again, and again after the table grew past its guess, byte for byte as cat', async () => {
    const cat = () => execFileSync('cat', ['/proc/net/ip_vs'], { encoding: 'latin1', maxBuffer: 64 << 20 });
    const read = procTextReader();
    expect(await read()).toBe(cat());
    expect(await read()).toBe(cat());
    // 200 more services of 10 real servers: well past the last length's eighth and 64 KiB
    const ops: IpvsOp[] = [];
    const added = Array.from({ length: 200 }, (_, i) => ({
      af: 2 as const,
      protocol: 17,
      address: formatIPv4(0xc6120000 + i),
      port: 53,
      fwmark: 0,
    }));
    for (const vs of added) {
      ops.push({ kind: 'newService', vs: { ...vs, scheduler: 'rr' } });
      for (let j = 0; j < DESTS; j++)
        ops.push({
          kind: 'newDest',
          vs,
          rs: { af: 2, address: formatIPv4(0xc6140000 + j), port: 53, weight: 1, fwdMethod: 0 },
        });
    }
    const before = cat().length;
    expect((await ipvs.run(ops)).filter((r) => !r.ok)).toEqual([]);
    try {
      const grown = cat();
      expect(grown.length).toBeGreaterThan(before + (before >> 3) + 65536);
      expect(await read()).toBe(grown);
    } finally {
      await ipvs.run(added.map((vs) => ({ kind: 'delService' as const, vs })));
    }
    expect(await read()).toBe(cat());
  });

  it('parses to every real server the netlink dump shows', async () => {
    const proc = parseProcIpVs(await readProcText());
    const netlink = await ipvs.listAll();
    const key = (
      vs: { address: string; port: number },
      dests: readonly { address: string; port: number; weight: number }[],
    ) =>
      `${vs.address}:${vs.port} ${dests
        .map((d) => `${d.address}:${d.port}/${d.weight}`)
        .sort()
        .join(' ')}`;
    expect(proc.services.map((s) => key(s, s.dests)).sort()).toEqual(netlink.map((e) => key(e.vs, e.dests)).sort());
    expect(proc.services.reduce((n, s) => n + s.dests.length, 0)).toBe(SERVICES * DESTS);
  });

  it('lists the services in the order of the netlink service dump (what matchProcServices tries first), with a fwmark service after them', async () => {
    const mark = { af: 2 as const, protocol: 0, address: '', port: 0, fwmark: 77 };
    expect((await ipvs.run([{ kind: 'newService', vs: { ...mark, scheduler: 'rr' } }]))[0]).toEqual({ ok: true });
    try {
      const proc = parseProcIpVs(await readProcText());
      const dumped = await ipvs.listServices();
      const id = (s: { protocol: number; address: string; port: number; fwmark: number }) =>
        s.fwmark ? `FWM ${s.fwmark}` : `${s.protocol} ${s.address}:${s.port}`;
      expect(proc.services.map(id)).toEqual(dumped.map(id));
      expect(dumped.map(id).at(-1)).toBe('FWM 77');
      // the hash table's order, not the order they were added in
      const added = Array.from({ length: SERVICES }, (_, i) => formatIPv4(0xc6120000 + i));
      expect(dumped.slice(0, SERVICES).map((s) => s.address)).not.toEqual(added);
      const matched = matchProcServices(dumped, proc, { tunnelDetails: false });
      expect(matched.every((p, i) => p === proc.services[i])).toBe(true);
    } finally {
      await ipvs.run([{ kind: 'delService', vs: mark }]);
    }
  });
});
