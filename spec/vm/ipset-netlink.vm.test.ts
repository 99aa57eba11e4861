// Inside the QEMU VM only (real kernel 6.1, real ipset 7.17). listIpsets (one netlink dump)
// must read exactly what parseIpsetSave makes of `ipset save`: every set, type, family,
// option and member, kube-proxy's 17 sets in both families, foreign types, an empty set, and
// a set whose members span several dump messages. The fake's list() must agree with the kernel.
// (The 100,000-member timing is not here: the ipset binary alone needs many minutes for it in
// the TCG guest.)
// Addresses: 10.96.0.0/12 cluster IPs, 203.0.113.0/24 LBs, 198.51.100.0/24 sources, fd00::/8,
// 2001:db8::/32.
import { ChildProcessExec, checkExec } from '../../lib/kernel/exec';
import { FakeIpset } from '../../testkit/kernel/fake-ipset';
import { IpsetState } from '../../lib/kernel/ipset/ipset';
import { listIpsets } from '../../lib/kernel/ipset/ipset-netlink';
import { DumpMemo } from '../../lib/netlink/dump-memo';
import { createIpset } from '../../lib/kernel/ipset/ipset-restore';
import { parseIpsetSave } from '../../lib/kernel/ipset/ipset-text';
import { planIpsets } from '../../lib/plan/ipsets';
import { RawTransport } from '../../lib/netlink/socket';
import { NETLINK_NETFILTER } from '../../lib/uapi/nfnetlink_conntrack';
import {
  entriesIpPortNet,
  entryIp,
  entryIpPort,
  entryIpPortIp,
  entryIpPortNet,
  entryPort,
} from '../../lib/model/ipset';

const run = (cmd: string, args: string[], stdin?: string) => new ChildProcessExec().run(cmd, args, stdin);
const sh = async (script: string, stdin?: string) =>
  checkExec('bash', ['-c', script], await run('bash', ['-c', script], stdin)).stdout;
const save = async () => parseIpsetSave(await sh('ipset save'));
const destroyAll = () => sh('ipset flush 2>/dev/null; ipset destroy 2>/dev/null || true');

/** Plain objects with sorted members, so a mismatch shows as a readable diff. */
const plain = (s: IpsetState) =>
  Object.fromEntries(
    [...s].sort(([a], [b]) => a.localeCompare(b)).map(([n, v]) => [n, { ...v, members: [...v.members].sort() }]),
  );

const v4 = () =>
  planIpsets('ipv4', {
    CLUSTER_IP: [
      entryIpPort('10.96.0.10', 'udp', 53),
      entryIpPort('10.96.0.10', 'tcp', 53),
      entryIpPort('10.96.0.1', 'tcp', 443),
    ],
    LOOP_BACK: [
      entryIpPortIp('10.244.1.5', 'tcp', 80, '10.244.1.5'),
      entryIpPortIp('10.244.1.6', 'sctp', 9000, '10.244.1.6'),
    ],
    EXTERNAL_IP: [entryIpPort('203.0.113.1', 'tcp', 80)],
    LOAD_BALANCER: [entryIpPort('203.0.113.7', 'tcp', 443), entryIpPort('203.0.113.7', 'udp', 443)],
    LOAD_BALANCER_FW: [entryIpPort('203.0.113.7', 'tcp', 443)],
    LOAD_BALANCER_SOURCE_IP: [entryIpPortIp('203.0.113.7', 'tcp', 443, '198.51.100.9')],
    LOAD_BALANCER_SOURCE_CIDR: [
      entryIpPortNet('203.0.113.7', 'tcp', 443, '198.51.100.0/24'),
      entryIpPortNet('203.0.113.7', 'tcp', 443, '198.51.100.9/32'),
      entryIpPortNet('203.0.113.7', 'udp', 53, '10.0.0.0/8'),
      ...entriesIpPortNet('203.0.113.8', 'tcp', 80, '0.0.0.0/0'),
    ],
    NODE_PORT_TCP: [entryPort(30080), entryPort(1), entryPort(65535)],
    NODE_PORT_UDP: [entryPort(30053)],
    NODE_PORT_SCTP: [entryIpPort('192.0.2.1', 'sctp', 30300)],
    HEALTH_CHECK_NODE_PORT: [entryPort(32000)],
    IPVS_IPS: [entryIp('10.96.0.10'), entryIp('10.96.0.1'), entryIp('203.0.113.7')],
  });
const v6 = () =>
  planIpsets('ipv6', {
    CLUSTER_IP: [
      entryIpPort('FD00::A', 'tcp', 80),
      entryIpPort('fd00:0:0:1::53', 'udp', 53),
      entryIpPort('2001:db8:0:0:1:0:0:1', 'sctp', 7),
    ],
    LOOP_BACK: [entryIpPortIp('fd00::1:5', 'tcp', 80, 'fd00::1:5')],
    LOAD_BALANCER_SOURCE_CIDR: [
      entryIpPortNet('2001:db8::7', 'tcp', 443, '2001:db8:1::/48'),
      entryIpPortNet('2001:db8::7', 'tcp', 443, '2001:db8:2::9/128'),
      ...entriesIpPortNet('2001:db8::8', 'udp', 53, '::/0'),
    ],
    NODE_PORT_LOCAL_SCTP: [entryIpPort('fd00::1', 'sctp', 30300)],
    IPVS_IPS: [entryIp('fd00::a'), entryIp('2001:db8::1')],
  });

/** Foreign sets of other types, made with the ipset binary as another program would. */
const FOREIGN = `create T-COMMENT hash:ip,port family inet hashsize 1024 maxelem 65536 comment
add T-COMMENT 10.96.0.10,tcp:80 comment "rr/0x0000/0|wlc/0x0000/0"
add T-COMMENT 10.96.0.11,udp:53
create T-EMPTY hash:ip family inet hashsize 1024 maxelem 65536
create T-NET6 hash:net family inet6 hashsize 64 maxelem 1000
add T-NET6 2001:db8::/32
add T-NET6 2001:db8:1::1
add T-NET6 fd00::/8 nomatch
create T-IP6 hash:ip family inet6
add T-IP6 ::ffff:10.0.0.1
add T-IP6 ::1
add T-IP6 2001:db8::1:0:0:1
add T-IP6 fe80::1
create T-EXT hash:ip,port family inet timeout 600 counters comment
add T-EXT 10.0.0.1,udp:53 timeout 0 packets 5 bytes 300 comment "a comment"
create T-NETPORT hash:net,port family inet
add T-NETPORT 10.0.0.0/8,tcp:80
add T-NETPORT 10.1.2.3,udp:53
create T-NETNET hash:net,net family inet
add T-NETNET 10.0.0.0/8,192.168.0.0/16
create T-IPMARK hash:ip,mark family inet
add T-IPMARK 10.0.0.1,0x10
create T-MAC hash:mac
add T-MAC 02:00:00:00:00:01
create T-IPMAC hash:ip,mac family inet
add T-IPMAC 10.0.0.1,02:00:00:00:00:0a
create T-NETIFACE hash:net,iface family inet
add T-NETIFACE 10.0.0.0/8,eth0
add T-NETIFACE 10.1.0.0/16,physdev:eth1
create T-BITPORT bitmap:port range 1000-2000
add T-BITPORT 1500
create T-LIST list:set size 8
add T-LIST T-EMPTY
`;

describe('listIpsets against the kernel', () => {
  beforeAll(destroyAll);
  afterAll(destroyAll);

  it("reads kube-proxy's sets (both families), foreign types and an empty set exactly as `ipset save` shows them", async () => {
    const desired = new Map([...v4(), ...v6()]);
    const ipset = createIpset();
    await ipset.observe();
    const r = await ipset.sync(desired);
    expect(r.created.length).toBe(34);
    await sh('ipset restore -exist', FOREIGN);

    const saved = await save();
    expect(saved.size).toBe(34 + 13);
    expect(plain(await listIpsets())).toEqual(plain(saved));
    // protocol 7 (what ipset 7.17 sends on this kernel) reads the same
    expect(plain(await listIpsets({ protocol: 7 }))).toEqual(plain(saved));

    // the fake, after the same restore text, lists what the kernel lists (initval is random in the kernel)
    const fake = new FakeIpset();
    fake.applyRestore(r.restoreText, true);
    const noInitval = (s: IpsetState) =>
      plain(
        new Map(
          [...s]
            .filter(([n]) => n.startsWith('KUBE-'))
            .map(([n, v]) => [n, { ...v, options: v.options.replace(/ initval 0x[0-9a-f]+$/, '') }]),
        ),
      );
    expect(noInitval(await fake.list())).toEqual(noInitval(saved));
    expect(fake.saves).toBe(0);
  });

  it('a set of 2,000 members (several dump messages) reads as `ipset save` shows it', async () => {
    // (ipset restore and save of 20,000 members take minutes each in the TCG guest; a dump
    // message holds at most a few hundred hash:ip,port,ip members)
    await destroyAll();
    const lines = [
      'create T-BIG hash:ip,port,ip family inet hashsize 4096 maxelem 100000',
      'create T-BIG6 hash:ip,port,net family inet6',
    ];
    for (let i = 0; i < 2_000; i++)
      lines.push(`add T-BIG 10.${i >> 16}.${(i >> 8) & 255}.${i & 255},tcp:${1 + (i % 65535)},192.0.2.${i % 256}`);
    for (let i = 0; i < 200; i++)
      lines.push(`add T-BIG6 fd00::${i.toString(16)},udp:53,2001:db8:${i.toString(16)}::/${32 + (i % 97)}`);
    lines.push('create T-AFTER bitmap:port range 0-65535', 'add T-AFTER 80');
    await sh('ipset restore', lines.join('\n') + '\n');
    const saved = await save();
    const transport = new RawTransport(NETLINK_NETFILTER, 1 << 20);
    let datagrams = 0;
    const onDatagram = transport.onDatagram.bind(transport);
    transport.onDatagram = (cb) => onDatagram((d) => (datagrams++, cb(d)));
    const listed = await listIpsets({ transport });
    expect(listed.get('T-BIG')!.members.size).toBe(2_000);
    expect(datagrams).toBeGreaterThanOrEqual(2);
    expect(plain(listed)).toEqual(plain(saved));
  }, 150_000);
});

describe('ipsets read again (the full sync every syncPeriod) against the kernel', () => {
  beforeAll(destroyAll);
  afterAll(destroyAll);

  it('a quiet kernel answers the same bytes: the same state object; a member added by ipset(8) is read anew', async () => {
    await sh('ipset restore -exist', 'create T-MEMO hash:ip,port family inet\nadd T-MEMO 10.96.0.1,tcp:443\n');
    const memo = new DumpMemo<IpsetState>();
    const first = await listIpsets({ memo });
    expect(await listIpsets({ memo })).toBe(first);
    await sh('ipset add T-MEMO 10.96.0.10,udp:53');
    const changed = await listIpsets({ memo });
    expect([...changed.get('T-MEMO')!.members].sort()).toEqual(['10.96.0.1,tcp:443', '10.96.0.10,udp:53']);
  });
});
