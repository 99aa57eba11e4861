// The kernel's dest trash as the daemon relies on it (DEVELOPERS.md, "the dest trash"), on
// Debian's 6.1 kernel with real traffic: a weight-0 real server given its weight back with
// SET_DEST is the same real server (its open connection goes on, its counters stay: no NEW_DEST,
// nothing in the trash); one deleted and added again within the trash period is revived from
// the trash (its counters come back), where a real server never added starts at 0.
//
// Pods as in traffic.vm.test.ts: a backend and a client namespace routed by the node; the VIP
// on a dummy device; no iptables rules (pod -> VIP is not masqueraded).
import { ChildProcess, spawn } from 'node:child_process';
import { openIpvs } from '../../lib/kernel/ipvs/ipvs-netlink';
import { Ipvs } from '../../lib/kernel/ipvs/ipvs';
import { ProcSysctl } from '../../lib/kernel/sysctl/sysctl';
import { ensureIpvsSysctls } from '../../lib/kernel/sysctl/ipvs-sysctls';
import { RealServer, RealServerSpec, VirtualServerId } from '../../lib/model/ipvs';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';
import { IP_VS_CONN_F } from '../../lib/uapi/ip_vs';
import { connect, deletePod, ip, longClient, makePod, startEchoServer, tryRun } from '../../testkit/netns';
import { eventually } from '../../testkit/wait-for';

const VIP = '10.97.0.10';
const LINK = 'trash-vip0';
const BACKEND = { name: 'trash-be', ip: '10.244.31.2', gw: '10.244.31.1' };
const CLIENT = { name: 'trash-cl', ip: '10.244.32.2', gw: '10.244.32.1' };
const HTTP: VirtualServerId = { af: AF_INET, protocol: IPPROTO_TCP, address: VIP, port: 80, fwmark: 0 };
const LONG: VirtualServerId = { ...HTTP, port: 9000 };
const rs = (address: string, port: number, weight = 1): RealServerSpec => ({
  af: AF_INET,
  address,
  port,
  fwdMethod: IP_VS_CONN_F.MASQ,
  weight,
});

describe("the kernel's dest trash (6.1)", () => {
  let ipvs: Ipvs;
  const children: ChildProcess[] = [];

  const dest = async (vs: VirtualServerId, address: string): Promise<RealServer | undefined> =>
    (await ipvs.listRealServers(vs)).find((d) => d.address === address);

  beforeAll(async () => {
    await ensureIpvsSysctls(new ProcSysctl(), { strictARP: false });
    for (const p of [BACKEND, CLIENT]) makePod(p.name, p.ip, p.gw);
    ip('link', 'add', LINK, 'type', 'dummy');
    ip('addr', 'add', `${VIP}/32`, 'dev', LINK);
    ip('link', 'set', LINK, 'up');
    children.push(await startEchoServer(BACKEND.name, 'backend', BACKEND.ip, 8080));
    children.push(
      spawn(
        'ip',
        [
          'netns',
          'exec',
          BACKEND.name,
          process.execPath,
          '-e',
          `require('net').createServer((c)=>c.pipe(c)).listen(9000,${JSON.stringify(BACKEND.ip)})`,
        ],
        { stdio: 'ignore' },
      ),
    );
    await eventually(
      'the echo server listening',
      async () => tryRun('ip', ['netns', 'exec', BACKEND.name, 'ss', '-ltn']).stdout,
      (o) => o.includes(`${BACKEND.ip}:9000`),
    );
    ipvs = await openIpvs();
    await ipvs.apply({ kind: 'flush' });
    for (const vs of [HTTP, LONG]) await ipvs.apply({ kind: 'newService', vs: { ...vs, scheduler: 'rr' } });
  });

  afterAll(async () => {
    for (const c of children) c.kill();
    await ipvs?.apply({ kind: 'flush' });
    ipvs?.close();
    for (const p of [BACKEND, CLIENT]) deletePod(p.name);
    tryRun('ip', ['link', 'del', LINK]);
  });

  it('SET_DEST to weight 0 and back: the same real server, its open connection goes on and its counters stay', async () => {
    await ipvs.apply({ kind: 'newDest', vs: LONG, rs: rs(BACKEND.ip, 9000) });
    const client = longClient(CLIENT.name, VIP, 9000);
    children.push(client.child);
    await eventually(
      'pongs',
      async () => client.out.filter((l) => l.startsWith('pong')).length,
      (n) => n >= 3,
    );
    const before = await eventually(
      'the open connection counted',
      () => dest(LONG, BACKEND.ip),
      (d) => d?.activeConns === 1 && (d.stats?.conns ?? 0n) >= 1n,
    );

    await ipvs.apply({ kind: 'setDest', vs: LONG, rs: rs(BACKEND.ip, 9000, 0) });
    const pongs = client.out.length;
    await eventually(
      'pongs while at weight 0',
      async () => client.out.length,
      (n) => n >= pongs + 3,
    );
    expect(await dest(LONG, BACKEND.ip)).toMatchObject({ weight: 0, activeConns: 1 });

    await ipvs.apply({ kind: 'setDest', vs: LONG, rs: rs(BACKEND.ip, 9000, 1) });
    const again = client.out.length;
    await eventually(
      'pongs after the weight came back',
      async () => client.out.length,
      (n) => n >= again + 3,
    );
    const after = await dest(LONG, BACKEND.ip);
    expect(after).toMatchObject({ weight: 1, activeConns: 1 });
    expect(after!.stats!.conns).toBe(before!.stats!.conns);
    expect(client.out.filter((l) => !l.startsWith('pong'))).toEqual([]);
  });

  it('DEL_DEST then NEW_DEST of the same address: revived from the trash with its counters; an address never added starts at 0', async () => {
    await ipvs.apply({ kind: 'newDest', vs: HTTP, rs: rs(BACKEND.ip, 8080) });
    for (let i = 0; i < 3; i++)
      expect(connect(CLIENT.name, VIP, 80)).toEqual({ outcome: 'ok', reply: `backend client=${CLIENT.ip}` });
    // the counters move when the rate estimator ticks (every 2 s)
    const served = await eventually(
      '3 connections counted',
      () => dest(HTTP, BACKEND.ip),
      (d) => (d?.stats?.conns ?? 0n) >= 3n,
    );

    await ipvs.apply({ kind: 'delDest', vs: HTTP, rs: rs(BACKEND.ip, 8080) });
    expect(await dest(HTTP, BACKEND.ip)).toBeUndefined();
    await ipvs.apply({ kind: 'newDest', vs: HTTP, rs: rs(BACKEND.ip, 8080) });
    await ipvs.apply({ kind: 'newDest', vs: HTTP, rs: rs('10.244.31.99', 8080) });
    const revived = await dest(HTTP, BACKEND.ip);
    expect(revived!.stats!.conns).toBe(served!.stats!.conns);
    expect((await dest(HTTP, '10.244.31.99'))!.stats!.conns).toBe(0n);
    // and it serves again (alone: nothing answers on the other address)
    await ipvs.apply({ kind: 'delDest', vs: HTTP, rs: rs('10.244.31.99', 8080) });
    expect(connect(CLIENT.name, VIP, 80)).toEqual({ outcome: 'ok', reply: `backend client=${CLIENT.ip}` });
  });
});
