// main(argv, deps) over the in-memory fake: commands change the table, kernel refusals print
// libipvs' messages, -R parses everything first and applies one batch.
import { Readable } from 'node:stream';
import { main } from '../../lib/cli/ipvsadm/ipvsadm';
import { parseRestore, splitRestoreLine } from '../../lib/cli/ipvsadm/restore';
import { StaticNames } from '../../lib/cli/ipvsadm/resolve-names';
import { FakeIpvs } from '../../testkit/kernel/fake-ipvs';
import { procIpVsText } from '../../testkit/proc-ip-vs-text';

const names = new StaticNames();

async function run(ipvs: FakeIpvs, line: string, stdin = ''): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(line.split(' ').filter(Boolean), {
    ipvs,
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
    stdin: Readable.from([stdin]),
    names,
  });
  return { code, out, err };
}

const SAVE = [
  '-A -t 10.0.0.1:443 -s rr -p 10800',
  '-a -t 10.0.0.1:443 -r 192.168.0.1:6443 -m -w 1',
  '-A -u 10.0.0.10:53 -s rr',
  '-a -u 10.0.0.10:53 -r 172.17.0.2:53 -m -w 0',
  '',
].join('\n');

describe('single commands', () => {
  it('-A then -a then -Ln', async () => {
    const ipvs = new FakeIpvs();
    expect(await run(ipvs, '-A -t 10.0.0.1:80 -s rr')).toEqual({ code: 0, out: '', err: '' });
    expect(await run(ipvs, '-a -t 10.0.0.1:80 -r 192.168.0.1:8080 -m -w 2')).toEqual({ code: 0, out: '', err: '' });
    expect((await run(ipvs, '-Ln')).out).toBe(
      [
        'IP Virtual Server version 1.2.1 (size=4096)',
        'Prot LocalAddress:Port Scheduler Flags',
        '  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn',
        'TCP  10.0.0.1:80 rr',
        '  -> 192.168.0.1:8080             Masq    2      0          0         ',
        '',
      ].join('\n'),
    );
  });

  it.each<[string, string, string]>([
    ['-A -t 10.0.0.1:80', '-A -t 10.0.0.1:80', 'Service already exists\n'],
    ['', '-E -t 10.0.0.9:80', 'No such service\n'],
    ['', '-D -t 10.0.0.9:80', 'No such service\n'],
    ['', '-a -t 10.0.0.9:80 -r 1.1.1.1', 'Service not defined\n'],
    ['-A -t 10.0.0.1:80', '-d -t 10.0.0.1:80 -r 1.1.1.1', 'No such destination\n'],
    ['-A -t 10.0.0.1:80', '-e -t 10.0.0.1:80 -r 1.1.1.1', 'No such destination\n'],
    ['', '-A -t 10.0.0.2:80 -s nosuch', 'Scheduler or persistence engine not found\n'],
    ['', '-Z -t 10.0.0.9:80', 'No such service\n'],
  ])('after %j, %s fails with "%s" and exit 255', async (setup, line, err) => {
    const ipvs = new FakeIpvs();
    if (setup) expect((await run(ipvs, setup)).code).toBe(0);
    expect(await run(ipvs, line)).toEqual({ code: 255, out: '', err });
  });

  it('-L -t of a missing service: "No such service", exit 1', async () => {
    expect(await run(new FakeIpvs(), '-Ln -t 10.0.0.9:80')).toEqual({ code: 1, out: '', err: 'No such service\n' });
  });

  it('a usage error never touches the table', async () => {
    const ipvs = new FakeIpvs();
    const spy = jest.spyOn(ipvs, 'apply');
    expect((await run(ipvs, '-A -t 10.0.0.1:80 -w 3')).code).toBe(2);
    expect(spy).not.toHaveBeenCalled();
  });

  it('--set then -L --timeout', async () => {
    const ipvs = new FakeIpvs();
    expect((await run(ipvs, '--set 10 20 30')).code).toBe(0);
    expect(await run(ipvs, '-L --timeout')).toEqual({ code: 0, out: 'Timeout (tcp tcpfin udp): 10 20 30\n', err: '' });
  });
});

describe('-R / --restore', () => {
  it('splits on blanks and tabs only, like config_stream', () => {
    expect(splitRestoreLine('  -A\t-t  "10.0.0.1:80"  ')).toEqual(['-A', '-t', '"10.0.0.1:80"']);
  });

  it('parses every line, skips blank ones', async () => {
    const r = await parseRestore(`${SAVE}\n\n-C\n`, names);
    expect(r.ok && r.lines.map((l) => [l.lineNo, l.op.kind])).toEqual([
      [1, 'newService'],
      [2, 'newDest'],
      [3, 'newService'],
      [4, 'newDest'],
      [7, 'flush'],
    ]);
  });

  it('applies the whole text as ONE batch; -Sn gives the text back', async () => {
    const ipvs = new FakeIpvs();
    const spy = jest.spyOn(ipvs, 'run');
    expect(await run(ipvs, '-R', SAVE)).toEqual({ code: 0, out: '', err: '' });
    expect(spy).toHaveBeenCalledTimes(1);
    expect(spy.mock.calls[0]![0]).toHaveLength(4);
    expect((await run(ipvs, '-Sn')).out).toBe(SAVE);
  });

  it.each<[string, string, number]>([
    [
      '-a -t 10.0.0.1:443 -r 192.168.0.2 -w x',
      'illegal weight specified\nipvsadm: restore: line 5: -a -t 10.0.0.1:443 -r 192.168.0.2 -w x\n',
      2,
    ],
    [
      '# a comment',
      "Try `ipvsadm -h' or 'ipvsadm --help' for more information.\nipvsadm: restore: line 5: # a comment\n",
      255,
    ],
    [
      '-A -t "10.1.0.8:80"',
      'illegal virtual server address[:port] specified\nipvsadm: restore: line 5: -A -t "10.1.0.8:80"\n',
      2,
    ],
    ['-R', "Try `ipvsadm -h' or 'ipvsadm --help' for more information.\nipvsadm: restore: line 5: -R\n", 255],
    [
      '-Ln',
      'not a table change (only -A -E -D -a -e -d -C -Z --set lines can be restored)\nipvsadm: restore: line 5: -Ln\n',
      2,
    ],
  ])('a bad line (%s) names the line and applies nothing', async (bad, err, code) => {
    const ipvs = new FakeIpvs();
    const spy = jest.spyOn(ipvs, 'run');
    expect(await run(ipvs, '-R', `${SAVE}${bad}\n-C\n`)).toEqual({ code, out: '', err });
    expect(spy).not.toHaveBeenCalled();
    expect(await ipvs.listAll()).toEqual([]);
  });

  it('reports every refused op with its line, applies the others, exits 255', async () => {
    const ipvs = new FakeIpvs();
    const text = `${SAVE}-A -t 10.0.0.1:443\n-a -t 10.0.0.99:80 -r 1.1.1.1\n-A -t 10.0.0.2:80\n`;
    const r = await run(ipvs, '-R', text);
    expect(r.code).toBe(255);
    const errLines = r.err.trim().split('\n');
    expect(errLines).toHaveLength(2);
    expect(errLines[0]).toMatch(
      /^ipvsadm: restore: line 5: Service already exists \(add virtual server TCP 10\.0\.0\.1:443: .*EEXIST/,
    );
    expect(errLines[1]).toMatch(
      /^ipvsadm: restore: line 6: Service not defined \(add real server 1\.1\.1\.1:80 of TCP 10\.0\.0\.99:80: .*ESRCH/,
    );
    expect((await ipvs.listServices()).map((s) => s.address).sort()).toEqual(['10.0.0.1', '10.0.0.10', '10.0.0.2']);
  });
});

describe('listings through /proc/net/ip_vs (deps.procIpVs)', () => {
  it.each(['-Ln', '-Sn', '-Ln --nosort', '-Ln --tun-info', '-Ln --stats', '-Ln --thresholds', '-L'])(
    '%s prints what the netlink listing prints',
    async (line) => {
      const ipvs = new FakeIpvs();
      await run(
        ipvs,
        '-R',
        `${SAVE}-A -f 7 -s rr\n-a -f 7 -r 10.9.9.9 -i --tun-type gue --tun-port 99\n-a -t 10.0.0.1:443 -r 192.168.0.2:6443 -g -w 4\n`,
      );
      let reads = 0;
      const procIpVs = async (): Promise<string> => {
        reads++;
        return procIpVsText(await ipvs.listAll());
      };
      let out = '';
      const code = await main(line.split(' '), {
        ipvs,
        stdout: { write: (s: string) => (out += s) },
        stderr: { write: () => undefined },
        stdin: Readable.from(['']),
        names,
        procIpVs,
      });
      expect({ code, out }).toEqual({ code: 0, out: (await run(ipvs, line)).out });
      expect(out.split('\n').length).toBeGreaterThan(6);
      // counters, rates and thresholds are not in /proc: those listings never read it
      expect(reads).toBe(/stats|thresholds/.test(line) ? 0 : 1);
    },
  );
});
