// Host names are looked up in a pass before the parse (parse-args.ts hostNamesNeeded):
// which names, how often, and that the parse then reads them.
import { hostNamesNeeded, parseArgs, parseArgsCached, HostLookups } from '../../lib/cli/ipvsadm/parse-args';
import { ServicesTable, StaticNames } from '../../lib/cli/ipvsadm/resolve-names';

const words = (line: string): string[] => line.split(' ').filter(Boolean);

class CountingNames extends StaticNames {
  readonly asked: string[] = [];
  override async hostToIPv4(name: string): Promise<string | undefined> {
    this.asked.push(name);
    return super.hostToIPv4(name);
  }
}

const names = (): CountingNames =>
  new CountingNames(
    { '10.9.9.9': 'vip.example.test', '10.1.1.1': 'rs.example.test', '255.255.255.0': 'mask24' },
    new ServicesTable('http 80/tcp'),
  );

describe('hostNamesNeeded', () => {
  it('the IPv4 hosts of -t -u --sctp-service -r, in argv order, once each; never an address', () => {
    expect(hostNamesNeeded(words('-a -t vip.example.test:80 -r rs.example.test:8080 -m'))).toEqual([
      'vip.example.test',
      'rs.example.test',
    ]);
    expect(hostNamesNeeded(words('-A -u vip.example.test:53'))).toEqual(['vip.example.test']);
    expect(hostNamesNeeded(words('-A --sctp-service vip.example.test:9'))).toEqual(['vip.example.test']);
    expect(hostNamesNeeded(words('-a -t 10.0.0.1:80 -r 10.1:80 -r [::1]:80 -t [fd00::1]:80'))).toEqual([]);
    expect(hostNamesNeeded(words('-a -t same:80 -r same:80'))).toEqual(['same']);
  });

  it("-M's mask unless the service is IPv6 by then (-t [v6] or -f ... -6)", () => {
    expect(hostNamesNeeded(words('-A -t 10.0.0.1:80 -p -M mask24'))).toEqual(['mask24']);
    expect(hostNamesNeeded(words('-A -t 10.0.0.1:80 -p -M 255.255.255.0'))).toEqual([]);
    expect(hostNamesNeeded(words('-A -t [fd00::1]:80 -p -M abc'))).toEqual([]);
    expect(hostNamesNeeded(words('-A -f 1 -6 -p -M abc'))).toEqual([]);
    expect(hostNamesNeeded(words('-A -6 -f 1 -p -M abc'))).toEqual(['abc']);
  });

  it('none where the parse stops before any option: no command first, -h, -v, a popt error', () => {
    expect(hostNamesNeeded([])).toEqual([]);
    expect(hostNamesNeeded(words('-t vip.example.test:80'))).toEqual([]);
    expect(hostNamesNeeded(words('-h -t vip.example.test:80'))).toEqual([]);
    expect(hostNamesNeeded(words('--start-daemon nope -t vip.example.test:80'))).toEqual([]);
    expect(hostNamesNeeded(words('-A --bogus -t vip.example.test:80'))).toEqual([]);
  });
});

describe('parse after the look-ups', () => {
  it('reads each name looked up, and a name nobody knows fails as ipvsadm does', async () => {
    const resolver = names();
    const r = await parseArgs(words('-a -t vip.example.test:http -r rs.example.test -m'), resolver);
    expect(r.ok && r.command.kind === 'op' && r.command.op).toMatchObject({
      kind: 'newDest',
      vs: { address: '10.9.9.9', port: 80 },
      rs: { address: '10.1.1.1', port: 80 },
    });
    expect(resolver.asked).toEqual(['vip.example.test', 'rs.example.test']);
    const unknown = await parseArgs(words('-A -t nowhere.test:80'), resolver);
    expect(unknown).toEqual({ ok: false, stderr: 'illegal virtual server address[:port] specified\n', exitCode: 2 });
  });

  it('a shared cache (restore): each name once; a line whose names are known parses synchronously', async () => {
    const resolver = names();
    const hosts: HostLookups = new Map();
    const first = parseArgsCached(words('-A -t vip.example.test:80 -p -M mask24'), resolver, {}, hosts);
    expect(first).toBeInstanceOf(Promise);
    expect((await first).ok).toBe(true);
    const again = parseArgsCached(words('-E -t vip.example.test:80 -p -M mask24'), resolver, {}, hosts);
    expect(again).not.toBeInstanceOf(Promise);
    expect(again).toMatchObject({ ok: true, command: { op: { vs: { address: '10.9.9.9', netmask: 0xffffff00 } } } });
    expect(resolver.asked).toEqual(['vip.example.test', 'mask24']);
  });
});
