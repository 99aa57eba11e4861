// listIpsets over a scripted NETLINK_NETFILTER peer, and observe's use of it: 0 execs when the
// netlink read serves, one logged fall-back to `ipset save` when it cannot. Golden bytes as in
// spec/netlink/ipset-codec.test.ts (literal numbers from ip_set.h).
// Addresses: 10.96.0.0/12 cluster IPs (RFC 1918 range kube uses), 192.0.2.0/24 (RFC 5737).
import { NetlinkError } from '../../../lib/errors';
import { IpsetNetlinkUnavailableError, IpsetRunner, IpsetState } from '../../../lib/kernel/ipset/ipset';
import { listIpsets } from '../../../lib/kernel/ipset/ipset-netlink';
import { DumpMemo } from '../../../lib/netlink/dump-memo';
import { createIpset } from '../../../lib/kernel/ipset/ipset-restore';
import { IpsetSync } from '../../../lib/kernel/ipset/ipset-sync';
import { ScriptedExec } from '../../../testkit/scripted-exec';
import { ScriptedTransport, SeenMessage } from '../../../testkit/scripted-transport';
import { be16, be32, cstr, genlMsg, ipv4, nest, nla, nlDone, nlError, u8 } from '../../../testkit/nl-builder';

const NBO = 0x4000;
/** one reply message: type (6 << 8) | IPSET_CMD_LIST 7, NLM_F_MULTI, nfgenmsg AF_INET v0 */
const reply = (seq: number, ...attrs: Buffer[]) =>
  genlMsg({ type: 0x607, flags: 0x2, seq, cmd: 2, version: 0 }, ...attrs);
const member = (ip: string, port: number, proto: number) =>
  nest(7, nest(1, nla(1 | NBO, ipv4(ip))), nla(4 | NBO, be16(port)), nla(7, u8(proto)));
const header = [
  nla(3, cstr('hash:ip,port')),
  nla(5, u8(2)),
  nla(4, u8(7)),
  nest(
    7,
    nla(18 | NBO, be32(1024)),
    nla(19 | NBO, be32(65536)),
    nla(21, u8(12)),
    nla(17 | NBO, be32(0x1234)),
    nla(25 | NBO, be32(0)),
    nla(26 | NBO, be32(1)),
    nla(24 | NBO, be32(2)),
  ),
];

const STATE: IpsetState = new Map([
  [
    'KUBE-CLUSTER-IP',
    {
      name: 'KUBE-CLUSTER-IP',
      type: 'hash:ip,port',
      family: 'ipv4' as const,
      options: 'family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x00001234',
      members: new Set(['10.96.0.10,udp:53', '10.96.0.1,tcp:443']),
    },
  ],
]);

describe('listIpsets (scripted kernel)', () => {
  it('sends one IPSET_CMD_SAVE dump and decodes a set spread over two datagrams; closes its socket', async () => {
    const t = new ScriptedTransport((msgs: SeenMessage[]) => {
      const m = msgs[0]!;
      const name = [nla(1, u8(6)), nla(2, cstr('KUBE-CLUSTER-IP'))];
      return [
        reply(m.seq, ...name, ...header, nest(8, member('10.96.0.10', 53, 17))),
        Buffer.concat([reply(m.seq, ...name, nest(8, member('10.96.0.1', 443, 6))), nlDone(m.seq)]),
      ];
    });
    expect(await listIpsets({ transport: t })).toEqual(STATE);
    expect(t.sent).toHaveLength(1);
    const req = t.sent[0]![0]!;
    // NLM_F_REQUEST | NLM_F_DUMP, nfgen_family AF_INET, IPSET_ATTR_PROTOCOL 6
    expect({ type: req.type, flags: req.flags, cmd: req.cmd, attrs: req.attrs.toString('hex') }).toEqual({
      type: 0x608,
      flags: 0x301,
      cmd: 2,
      attrs: '0500010006000000',
    });
    expect(t.closed).toBe(true);
  });

  it('with a memo, a dump of the same bytes is the last state itself; a changed member decodes anew', async () => {
    const dump = (port: number) =>
      new ScriptedTransport((msgs: SeenMessage[]) => {
        const m = msgs[0]!;
        const name = [nla(1, u8(6)), nla(2, cstr('KUBE-CLUSTER-IP'))];
        return [
          reply(m.seq, ...name, ...header, nest(8, member('10.96.0.10', 53, 17))),
          Buffer.concat([reply(m.seq, ...name, nest(8, member('10.96.0.1', port, 6))), nlDone(m.seq)]),
        ];
      });
    const memo = new DumpMemo<IpsetState>();
    const first = await listIpsets({ transport: dump(443), memo });
    expect(first).toEqual(STATE);
    expect(await listIpsets({ transport: dump(443), memo })).toBe(first);
    const changed = await listIpsets({ transport: dump(6443), memo });
    expect([...changed.get('KUBE-CLUSTER-IP')!.members].sort()).toEqual(['10.96.0.1,tcp:6443', '10.96.0.10,udp:53']);
  });

  it('IPSET_ERR_PROTOCOL and EOPNOTSUPP are IpsetNetlinkUnavailableError; another refusal is NetlinkError "dump ipsets"', async () => {
    const refuse = (errno: number) => new ScriptedTransport((msgs) => [nlError(errno, msgs[0]!)]);
    await expect(listIpsets({ transport: refuse(4097) })).rejects.toThrow(IpsetNetlinkUnavailableError);
    await expect(listIpsets({ transport: refuse(4097) })).rejects.toThrow(
      'dump ipsets (protocol 6): IPSET_ERR_PROTOCOL',
    );
    await expect(listIpsets({ transport: refuse(95) })).rejects.toThrow(IpsetNetlinkUnavailableError);
    const t = refuse(1);
    const e = await listIpsets({ transport: t }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(NetlinkError);
    expect(e).toMatchObject({ errno: 1, operation: 'dump ipsets', code: 'KIPVS_NETLINK' });
    expect(t.closed).toBe(true);
  });

  it('a set type it cannot spell is IpsetNetlinkUnavailableError naming the set', async () => {
    const t = new ScriptedTransport((msgs) => [
      Buffer.concat([
        reply(
          msgs[0]!.seq,
          nla(1, u8(6)),
          nla(2, cstr('T-ODD')),
          nla(3, cstr('hash:ip,odd')),
          nla(5, u8(2)),
          nla(4, u8(1)),
        ),
        nlDone(msgs[0]!.seq),
      ]),
    ]);
    await expect(listIpsets({ transport: t })).rejects.toThrow(/T-ODD.*hash:ip,odd/);
  });
});

/** Collects warnings (keeps the output quiet). */
const capture = () => {
  const lines: string[] = [];
  return { lines, log: { warn: (m: string) => lines.push(m) } };
};
const SAVE =
  'create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x00001234\n' +
  'add KUBE-CLUSTER-IP 10.96.0.10,udp:53\nadd KUBE-CLUSTER-IP 10.96.0.1,tcp:443\n';

describe('observe with a netlink list', () => {
  it('uses list: no process, the state remembered (an unchanged sync runs nothing)', async () => {
    const exec = new ScriptedExec([]);
    let lists = 0;
    const ipset = createIpset(exec, 'ipset', capture().log, async () => (lists++, STATE));
    expect(await ipset.observeCounted()).toEqual({ state: STATE, execs: 0 });
    const r = await ipset.sync(
      new Map([
        [
          'KUBE-CLUSTER-IP',
          { type: 'hash:ip,port', family: 'ipv4', members: STATE.get('KUBE-CLUSTER-IP')!.members as never },
        ],
      ]),
    );
    expect(r.execs).toBe(0);
    expect(lists).toBe(1);
  });

  it('falls back to `ipset save` when list is unavailable, warns once, and stops asking list', async () => {
    const exec = new ScriptedExec([
      { cmd: 'ipset', args: ['save'], stdout: SAVE },
      { cmd: 'ipset', args: ['save'], stdout: SAVE },
    ]);
    const { lines, log } = capture();
    let lists = 0;
    const ipset = createIpset(exec, 'ipset', log, async () => {
      lists++;
      throw new IpsetNetlinkUnavailableError('dump ipsets (protocol 6): IPSET_ERR_PROTOCOL');
    });
    expect(await ipset.observeCounted()).toEqual({ state: STATE, execs: 1 });
    expect(await ipset.observeCounted()).toEqual({ state: STATE, execs: 1 });
    expect(lists).toBe(1);
    expect(lines).toEqual([
      'ipset: reading the sets over netlink is not possible here (dump ipsets (protocol 6): IPSET_ERR_PROTOCOL); using `ipset save` from now on',
    ]);
  });

  it('any other list failure is the observe failure (never hidden behind a save)', async () => {
    const runner: IpsetRunner = {
      save: async () => {
        throw new Error('save must not run');
      },
      restore: async () => undefined,
      list: async () => {
        throw new NetlinkError(12, 'dump ipsets', '', 'ENOMEM');
      },
    };
    await expect(new IpsetSync(runner, capture().log).observe()).rejects.toThrow(NetlinkError);
  });
});
