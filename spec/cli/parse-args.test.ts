// Expected commands and messages from ipvsadm 1.31's parse_options/process_options; the
// messages and exit statuses were checked against the real ipvsadm in the VM.
import { IpvsOp } from '../../lib/kernel/ipvs/ipvs';
import { VirtualServerId } from '../../lib/model/ipvs';
import { IpvsadmCommand, parseArgs } from '../../lib/cli/ipvsadm/parse-args';
import { ServicesTable, StaticNames } from '../../lib/cli/ipvsadm/resolve-names';
import { AF_INET, AF_INET6, IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP } from '../../lib/uapi/inet';

const resolver = new StaticNames(
  { '127.0.0.1': 'localhost', '10.9.9.9': 'vip.example.test' },
  new ServicesTable('http 80/tcp www\ndomain 53/udp\nhttp-alt 8080/tcp'),
);
const parse = (line: string): ReturnType<typeof parseArgs> => parseArgs(line.split(' ').filter(Boolean), resolver);
const op = async (line: string): Promise<IpvsOp> => {
  const r = await parse(line);
  if (!r.ok) throw new Error(`unexpected failure: ${r.stderr}`);
  if (r.command.kind !== 'op') throw new Error(`not an op: ${r.command.kind}`);
  return r.command.op;
};
const cmd = async (line: string): Promise<IpvsadmCommand> => {
  const r = await parse(line);
  if (!r.ok) throw new Error(`unexpected failure: ${r.stderr}`);
  return r.command;
};

const TCP80: VirtualServerId = { af: AF_INET, protocol: IPPROTO_TCP, address: '10.0.0.1', port: 80, fwmark: 0 };

describe('service commands', () => {
  it('-A defaults: wlc, no flags, /32 netmask', async () => {
    expect(await op('-A -t 10.0.0.1:80')).toEqual({
      kind: 'newService',
      vs: { ...TCP80, scheduler: 'wlc', flags: 0, timeout: 0, netmask: 0xffffffff, peName: '' },
    });
  });

  it('-p without a value is 360 s (IPVS_SVC_PERSISTENT_TIMEOUT), -p50, --persistent=70, -p -s', async () => {
    const t = async (l: string): Promise<unknown> => ((await op(l)) as { vs: { timeout: number } }).vs.timeout;
    expect(await t('-A -t 10.0.0.1:80 -p')).toBe(360);
    expect(await t('-A -t 10.0.0.1:80 -p -s rr')).toBe(360);
    expect(await t('-A -t 10.0.0.1:80 -p 50')).toBe(50);
    expect(await t('-A -t 10.0.0.1:80 -p50')).toBe(50);
    expect(await t('-A -t 10.0.0.1:80 --persistent=70')).toBe(70);
  });

  it('-E, -D, full option set, UDP ops, sh flags, pe', async () => {
    expect(await op('-E -u 10.0.0.1:53 -s mh -o -b mh-port,mh-fallback')).toEqual({
      kind: 'setService',
      vs: {
        ...TCP80,
        protocol: IPPROTO_UDP,
        port: 53,
        scheduler: 'mh',
        flags: 0x4 | 0x8 | 0x10,
        timeout: 0,
        netmask: 0xffffffff,
        peName: '',
      },
    });
    expect(await op('-A -t 10.0.0.1:80 -s sh -p 10800 -M 255.255.255.0 --pe sip -b sh-port')).toEqual({
      kind: 'newService',
      vs: { ...TCP80, scheduler: 'sh', flags: 0x1 | 0x10, timeout: 10800, netmask: 0xffffff00, peName: 'sip' },
    });
    expect(await op('-D --sctp-service 10.0.0.1:3868')).toEqual({
      kind: 'delService',
      vs: { af: AF_INET, protocol: IPPROTO_SCTP, address: '10.0.0.1', port: 3868, fwmark: 0 },
    });
  });

  it('addresses as inet_aton reads them, host names, service names, IPv6', async () => {
    const id = async (l: string): Promise<unknown> => {
      const o = (await op(l)) as { vs: { address: string; port: number; af: number } };
      return [o.vs.af, o.vs.address, o.vs.port];
    };
    expect(await id('-D -t 167772171:80')).toEqual([AF_INET, '10.0.0.11', 80]);
    expect(await id('-D -t 10.11:80')).toEqual([AF_INET, '10.0.0.11', 80]);
    expect(await id('-D -t 0x0a00000c:80')).toEqual([AF_INET, '10.0.0.12', 80]);
    expect(await id('-D -t localhost:http')).toEqual([AF_INET, '127.0.0.1', 80]);
    expect(await id('-D -t [2001:db8:0:0::1]:443')).toEqual([AF_INET6, '2001:db8::1', 443]);
    // a bare IPv6 address is all address: the port is 0
    expect(await id('-D -t 2001::6:80')).toEqual([AF_INET6, '2001::6:80', 0]);
    // "[v4]:port" loses its port, as in ipvsadm
    expect(await id('-D -t [10.0.0.1]:80')).toEqual([AF_INET, '10.0.0.1', 0]);
    expect(await id('-D -t10.0.0.1:80')).toEqual([AF_INET, '10.0.0.1', 80]);
    expect(await id('-D --tcp-service=10.0.0.1:80')).toEqual([AF_INET, '10.0.0.1', 80]);
  });

  it('fwmark services, -6 after -f resets the mask to 128, -M before -t for IPv6 is replaced', async () => {
    expect(await op('-A -f 5 -6 -p 10 -M 64')).toEqual({
      kind: 'newService',
      vs: {
        af: AF_INET6,
        protocol: 0,
        address: '',
        port: 0,
        fwmark: 5,
        scheduler: 'wlc',
        flags: 1,
        timeout: 10,
        netmask: 64,
        peName: '',
      },
    });
    expect(((await op('-A -f 7 -M 64 -6')) as { vs: { netmask: number } }).vs.netmask).toBe(128);
    expect(((await op('-A -f 6 -M 64')) as { vs: { netmask: number } }).vs.netmask).toBe(64); // inet_aton("64") = 0.0.0.64
    expect(((await op('-A -M 255.0.0.0 -t [2001::1]:80')) as { vs: { netmask: number } }).vs.netmask).toBe(128);
    expect(await op('-D -f 4294967295')).toEqual({
      kind: 'delService',
      vs: { af: AF_INET, protocol: 0, address: '', port: 0, fwmark: 4294967295 },
    });
  });
});

describe('real-server commands', () => {
  it('-a defaults: direct routing, weight 1, the service port', async () => {
    expect(await op('-a -t 10.0.0.1:80 -r 192.168.0.1:8080')).toEqual({
      kind: 'newDest',
      vs: TCP80,
      rs: { af: AF_INET, address: '192.168.0.1', port: 80, fwdMethod: 3, weight: 1, uThreshold: 0, lThreshold: 0 },
    });
  });

  it('-m keeps the port; -r without port takes the service port; weight 0; thresholds', async () => {
    expect(await op('-e -t 10.0.0.1:80 -r 192.168.0.1:http-alt -m -w 0 -x 100 -y 5')).toEqual({
      kind: 'setDest',
      vs: TCP80,
      rs: { af: AF_INET, address: '192.168.0.1', port: 8080, fwdMethod: 0, weight: 0, uThreshold: 100, lThreshold: 5 },
    });
    expect(((await op('-a -t 10.0.0.1:80 -r 192.168.0.1 -m')) as { rs: { port: number } }).rs.port).toBe(80);
  });

  it('-d keeps the given port whatever the method', async () => {
    expect(await op('-d -t 10.0.0.1:80 -r 192.168.0.1:8080')).toEqual({
      kind: 'delDest',
      vs: TCP80,
      rs: { af: AF_INET, address: '192.168.0.1', port: 8080 },
    });
  });

  it('tunnels: -i is ipip, gue needs a port, gre, checksum options; mixed families only tunnelled', async () => {
    expect(((await op('-a -t 10.0.0.1:80 -r 192.168.0.2 -i')) as { rs: unknown }).rs).toEqual({
      af: AF_INET,
      address: '192.168.0.2',
      port: 80,
      fwdMethod: 2,
      weight: 1,
      uThreshold: 0,
      lThreshold: 0,
      tunType: 0,
      tunPort: 0,
      tunFlags: 0,
    });
    expect(
      (
        (await op('-a -t 10.0.0.1:80 -r 192.168.0.2 -i --tun-type gue --tun-port 6080 --tun-remcsum')) as {
          rs: unknown;
        }
      ).rs,
    ).toMatchObject({
      fwdMethod: 2,
      tunType: 1,
      tunPort: 6080,
      tunFlags: 2,
    });
    expect(
      ((await op('-a -t 10.0.0.1:80 -r 192.168.0.2 -i --tun-type gre --tun-csum')) as { rs: unknown }).rs,
    ).toMatchObject({ tunType: 2, tunFlags: 1 });
    expect(((await op('-a -t 10.0.0.1:80 -r [2001::2]:80 -i')) as { rs: unknown }).rs).toMatchObject({
      af: AF_INET6,
      address: '2001::2',
    });
  });
});

describe('other commands', () => {
  it.each<[string, IpvsadmCommand]>([
    ['', { kind: 'list-all', format: expect.objectContaining({ numeric: false }) as never }],
    ['-Ln', { kind: 'list-all', format: expect.objectContaining({ numeric: true, stats: false }) as never }],
    [
      '-l --stats --exact --sort',
      { kind: 'list-all', format: expect.objectContaining({ stats: true, exact: true, nosort: false }) as never },
    ],
    [
      '-L --rate --thresholds --persistent-conn --tun-info --nosort',
      {
        kind: 'list-all',
        format: expect.objectContaining({
          rate: true,
          thresholds: true,
          persistentConn: true,
          tunInfo: true,
          nosort: true,
        }) as never,
      },
    ],
    [
      '-Lnt 10.0.0.1:80',
      { kind: 'list-service', format: expect.objectContaining({ numeric: true }) as never, vs: TCP80 },
    ],
    ['-L --timeout', { kind: 'list-timeout' }],
    ['-Sn', { kind: 'save', format: expect.objectContaining({ numeric: true, rule: true }) as never }],
    ['-R', { kind: 'restore' }],
    ['-h -L', { kind: 'help' }],
    ['-v -n', { kind: 'version' }],
    ['-C', { kind: 'op', command: 'flush', op: { kind: 'flush' } }],
    ['-Z', { kind: 'op', command: 'zero', op: { kind: 'zero' } }],
    ['-Z -t 10.0.0.1:80', { kind: 'op', command: 'zero', op: { kind: 'zero', vs: TCP80 } }],
    [
      '--set 10 20 30',
      { kind: 'op', command: 'set', op: { kind: 'setConfig', timeouts: { tcp: 10, tcpFin: 20, udp: 30 } } },
    ],
    ['--set 0 0 0', { kind: 'op', command: 'set', op: { kind: 'setConfig', timeouts: { tcp: 0, tcpFin: 0, udp: 0 } } }],
  ])('%s', async (line, expected) => {
    expect(await cmd(line)).toEqual(expected);
  });
});

describe("errors: ipvsadm's message and exit status", () => {
  const TRY = "Try `ipvsadm -h' or 'ipvsadm --help' for more information.\n";
  it.each<[string, string, number]>([
    ['-Q', TRY, 255],
    ['--bogus', TRY, 255],
    ['-nL', TRY, 255],
    ['foo', TRY, 255],
    ['-L --bogus', '--bogus: unknown option\n', 255],
    ['-A -t', '-t: missing argument\n', 255],
    ['-L -x', '-x: missing argument\n', 255],
    ['-L --stats=1', '--stats=1: option does not take an argument\n', 255],
    ['-A -E -t 10.0.0.1:80', "invalid option `-E'\n", 2],
    ['-L -h', "invalid option `-h'\n", 2],
    ['-L -x 5', "Illegal 'u-threshold' option with the 'list' command\n", 2],
    ['-A', "You need to supply the 'service-address' option for the 'add-service' command\n", 2],
    ['-a -t 10.0.0.1:80', "You need to supply the 'real-server' option for the 'add-server' command\n", 2],
    ['-L --timeout --daemon', "The option 'daemon' conflicts with the 'timeout' option in the 'list' command\n", 2],
    ['-L -c --stats', 'options conflicts in the list command\n', 2],
    ['-L --timeout --persistent-conn', 'options conflicts in the list command\n', 2],
    ['-L -t 1.1.1.1:1 -u 2.2.2.2:2', "multiple 'service-address' options specified\n", 2],
    ['-Ln -n', "multiple 'numeric' options specified\n", 2],
    ['-a -t 10.0.0.1:80 -r 1.1.1.1 -m -g', "multiple 'forwarding-method' options specified\n", 2],
    ['-Sn --exact', "Illegal 'exact' option with the 'save' command\n", 2],
    ['-C -n', "Illegal 'numeric' option with the 'flush' command\n", 2],
    ['-Z --stats', "Illegal 'stats' option with the 'zero' command\n", 2],
    ['-D -t 10.0.0.99:80 -s rr', "Illegal 'scheduler' option with the 'delete-service' command\n", 2],
    ['-A -t 10.0.0.3:0', 'Zero port specified for non-persistent service\n', 2],
    ['-A -t 10.0.0.3', 'Zero port specified for non-persistent service\n', 2],
    ['-A -t 10.0.0.3:80 -o', 'One-Packet Scheduling is only for UDP virtual services\n', 2],
    ['-A -t 10.0.0.3:80 -b sh-port', "incompatible scheduler flag `sh-port'\n", 2],
    ['-A -t 10.0.0.3:80 -s sh -b mh-port', "incompatible scheduler flag `mh-port'\n", 2],
    ['-A -t 10.0.0.3:80 -s sh -b foo', "invalid scheduler flag `foo'\n", 2],
    ['-A -t 10.0.0.3:80 -p abc', "invalid timeout value `abc' specified\n", 2],
    ['-A -t 10.0.0.3:80 -p 0', "invalid timeout value `0' specified\n", 2],
    ['-A -t 10.0.0.3:80 -M 255.x', 'illegal virtual server persistent mask specified\n', 2],
    ['-A -t [2001::5]:80 -M 129', 'illegal ipv6 netmask specified\n', 2],
    ['-A -t [2001::5]:80 -M abc', 'illegal ipv6 netmask specified\n', 2],
    ['-A -t 10.0.0.3:99999', 'illegal virtual server address[:port] specified\n', 2],
    ['-A -t 999.0.0.3:1', 'illegal virtual server address[:port] specified\n', 2],
    ['-A -t 10.0.0.10:nosuchsvc', 'illegal virtual server address[:port] specified\n', 2],
    ['-A -t [2001::7]', 'illegal virtual server address[:port] specified\n', 2],
    ['-A -t [2001::7]:', 'illegal virtual server address[:port] specified\n', 2],
    ['-A -t 10.0.0.32:', 'illegal virtual server address[:port] specified\n', 2],
    ['-A -t -s rr', 'illegal virtual server address[:port] specified\n', 2],
    ['-A -f 0', "invalid fwmark value `0' specified\n", 2],
    ['-A -f 4294967296', "invalid fwmark value `4294967296' specified\n", 2],
    ['-A -f 12abc', "invalid fwmark value `12abc' specified\n", 2],
    ['-A -t 10.0.0.3:80 -6', '-6 used before -f\n\n', 2],
    ['-A -t 10.0.0.3:80 extra', 'unexpected argument extra\n', 2],
    ['-C x', 'unexpected argument x\n', 2],
    ['--set 1 2', '--set option requires 3 timeout values\n', 2],
    ['--set 1 2 x', "invalid timeout value `x' specified\n", 2],
    ['--set 1 2 3 4', 'unexpected argument 4\n', 2],
    ['-a -t 10.0.0.1:80 -r 10.0.0.2 -w -1', 'illegal weight specified\n', 2],
    ['-a -t 10.0.0.1:80 -r 10.0.0.2 -w 2147483648', 'illegal weight specified\n', 2],
    ['-a -t 10.0.0.1:80 -r 10.0.0.2 -w 0x10', 'illegal weight specified\n', 2],
    ['-a -t 10.0.0.1:80 -r 10.0.0.2 -x -1', 'illegal u_threshold specified\n', 2],
    ['-a -t 10.0.0.1:80 -r 10.0.0.2 -y x', 'illegal l_threshold specified\n', 2],
    ['-a -t 10.0.0.1:80 -r [2001::1]', 'illegal real server address[:port] specified\n', 2],
    ['-a -t 10.0.0.1:80 -r [2001::1]:80 -m', 'Different address family is allowed only for tunneling servers\n', 2],
    [
      '-a -t 10.0.0.1:80 -r 1.1.1.1 -i --tun-type gre --tun-remcsum',
      "Illegal 'tun-remcsum' option with the 'gre' tunnel type\n",
      2,
    ],
    [
      '-a -t 10.0.0.1:80 -r 1.1.1.1 -i --tun-type gue',
      "You need to supply the 'tun-port' option for the 'gue' tunnel type\n",
      2,
    ],
    ['-a -t 10.0.0.1:80 -r 1.1.1.1 -m --tun-type gue', 'Tunnel options conflict with forward method\n', 2],
    ['-a -t 10.0.0.1:80 -r 1.1.1.1 --tun-type gue --tun-port 5', 'Tunnel options conflict with forward method\n', 2],
    ['-a -t 10.0.0.1:80 -r 1.1.1.1 -i --tun-port 5', "Illegal 'tun-port' option with the 'ipip' tunnel type\n", 2],
    [
      '-a -t 10.0.0.1:80 -r 1.1.1.1 -i --tun-type ipip --tun-csum',
      "Illegal 'tun-csum' option with the 'ipip' tunnel type\n",
      2,
    ],
    ['-a -t 10.0.0.1:80 -r 1.1.1.1 -i --tun-type xx', 'illegal tunnel type specified\n', 2],
    ['-a -t 10.0.0.1:80 -r 1.1.1.1 -i --tun-type gue --tun-port 0', 'illegal tunnel port specified\n', 2],
    [
      '-a -t 10.0.0.1:80 -r 1.1.1.1 -i --tun-type gue --tun-port 7 --tun-csum --tun-nocsum',
      "The option 'tun-csum' conflicts with the 'tun-nocsum' option in the 'gue' tunnel type\n",
      2,
    ],
    ['--start-daemon foo', 'illegal start-daemon parameter specified\n', 2],
    ['-R -n', "Illegal 'numeric' option with the 'restore' command\n", 2],
  ])('%s', async (line, stderr, exitCode) => {
    const r = await parse(line);
    expect(r).toEqual({ ok: false, stderr, exitCode });
  });

  it('a -R line inside a restore is refused like ipvsadm does', async () => {
    expect(await parseArgs(['-R'], resolver, { readingStdin: true })).toEqual({
      ok: false,
      stderr: "Try `ipvsadm -h' or 'ipvsadm --help' for more information.\n",
      exitCode: 255,
    });
  });
});
