// formatChangeLine: one IPVS table change as the ipvsadm command that makes it. Golden lines
// written by hand in ipvsadm-save's spelling; each parses back (with our ipvsadm parser) to the
// very change it came from.
import { formatChangeLine } from '../../lib/cli/ipvsadm/format-list';
import { parseArgs } from '../../lib/cli/ipvsadm/parse-args';
import { StaticNames } from '../../lib/cli/ipvsadm/resolve-names';
import { TableChange } from '../../lib/model/views';
import { AF_INET, AF_INET6, IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP } from '../../lib/uapi/inet';
import { IP_VS_CONN_F, IP_VS_SVC_F } from '../../lib/uapi/ip_vs';

const vs4 = { af: AF_INET, protocol: IPPROTO_TCP, address: '10.96.0.1', port: 443, fwmark: 0 } as const;
const spec4 = { ...vs4, scheduler: 'rr', flags: 0, timeout: 0, netmask: 0xffffffff, peName: '' };
const rs4 = { af: AF_INET, address: '10.244.1.2', port: 6443 } as const;
const dest4 = { ...rs4, fwdMethod: IP_VS_CONN_F.MASQ, weight: 1, uThreshold: 0, lThreshold: 0 };
const vs6 = { af: AF_INET6, protocol: IPPROTO_UDP, address: 'fd00::a', port: 53, fwmark: 0 } as const;

const CASES: { name: string; change: TableChange; line: string }[] = [
  { name: 'new service', change: { kind: 'newService', vs: spec4 }, line: '-A -t 10.96.0.1:443 -s rr' },
  {
    name: 'new persistent service',
    change: { kind: 'newService', vs: { ...spec4, flags: IP_VS_SVC_F.PERSISTENT, timeout: 10800 } },
    line: '-A -t 10.96.0.1:443 -s rr -p 10800',
  },
  {
    name: 'edit service (scheduler)',
    change: { kind: 'setService', vs: { ...spec4, scheduler: 'wlc' } },
    line: '-E -t 10.96.0.1:443 -s wlc',
  },
  { name: 'delete service', change: { kind: 'delService', vs: vs4 }, line: '-D -t 10.96.0.1:443' },
  { name: 'delete UDP IPv6 service', change: { kind: 'delService', vs: vs6 }, line: '-D -u [fd00::a]:53' },
  {
    name: 'delete SCTP service',
    change: { kind: 'delService', vs: { ...vs4, protocol: IPPROTO_SCTP, port: 3868 } },
    line: '-D --sctp-service 10.96.0.1:3868',
  },
  {
    name: 'new real server',
    change: { kind: 'newDest', vs: vs4, rs: dest4 },
    line: '-a -t 10.96.0.1:443 -r 10.244.1.2:6443 -m -w 1',
  },
  {
    name: 'drain a real server',
    change: { kind: 'setDest', vs: vs4, rs: { ...dest4, weight: 0 } },
    line: '-e -t 10.96.0.1:443 -r 10.244.1.2:6443 -m -w 0',
  },
  {
    name: 'delete real server',
    change: { kind: 'delDest', vs: vs4, rs: rs4 },
    line: '-d -t 10.96.0.1:443 -r 10.244.1.2:6443',
  },
  {
    name: 'new IPv6 real server',
    change: {
      kind: 'newDest',
      vs: vs6,
      rs: {
        af: AF_INET6,
        address: 'fd00:10::2',
        port: 53,
        fwdMethod: IP_VS_CONN_F.MASQ,
        weight: 1,
        uThreshold: 0,
        lThreshold: 0,
      },
    },
    line: '-a -u [fd00::a]:53 -r [fd00:10::2]:53 -m -w 1',
  },
];

describe('formatChangeLine', () => {
  it.each(CASES)('$name', async ({ change, line }) => {
    expect(formatChangeLine(change)).toBe(line);
    const parsed = await parseArgs(line.split(' '), new StaticNames());
    if (!parsed.ok) throw new Error(parsed.stderr);
    expect(parsed.command).toMatchObject({ kind: 'op', op: change });
  });
});
