// The restore fast path must give exactly parseArgs' op for every line it takes, and leave
// every other line to parseArgs.
import { parseArgs } from '../../lib/cli/ipvsadm/parse-args';
import { StaticNames } from '../../lib/cli/ipvsadm/resolve-names';
import { parseSaveLine } from '../../lib/cli/ipvsadm/parse-save-line';

const resolver = new StaticNames({ '10.9.9.9': 'vip.example.test' });

async function slow(line: string): Promise<unknown> {
  const r = await parseArgs(line.split(' '), resolver, { readingStdin: true });
  return r.ok && r.command.kind === 'op' ? { command: r.command.command, op: r.command.op } : undefined;
}

describe('parseSaveLine', () => {
  it.each([
    '-A -t 10.96.0.1:80 -s rr',
    '-A -u 10.96.0.10:53 -s wlc',
    '-A -t 255.255.255.255:65535 -s a-scheduler-name-longer-than-16',
    '-A -t 1.2.3.4:080 -s rr',
    '-a -t 10.96.0.1:80 -r 172.16.0.1:8080 -m -w 1',
    '-a -u 10.96.0.10:53 -r 172.16.0.2:5353 -m -w 0',
    '-a -t 10.96.0.1:80 -r 172.16.0.1:8080 -g -w 2147483647',
    '-a -t 10.96.0.1:80 -r 172.16.0.1:8080 -i -w 007',
    '-a -t 10.96.0.1:0 -r 172.16.0.1:0 -m -w 1',
  ])('takes %s, as parseArgs parses it', async (line) => {
    const fast = parseSaveLine(line.split(' '));
    expect(fast).toBeDefined();
    expect(fast).toEqual(await slow(line));
  });

  it.each([
    '-A -t 10.96.0.1:80 -s rr -p 10',
    '-A -t 10.96.0.1:0 -s rr',
    '-A -t 10.96.0.1:80 -s -m',
    '-A -t vip.example.test:80 -s rr',
    '-A -t [2001:db8::1]:80 -s rr',
    '-A -t 010.96.0.1:80 -s rr',
    '-A -t 10.96.0.1 -s rr',
    '-A -t 10.96.0.1:65536 -s rr',
    '-A --sctp-service 10.0.0.5:3868 -s rr',
    '-A -f 5 -s rr',
    '-E -t 10.96.0.1:80 -s rr',
    '-a -t 10.96.0.1:80 -r 172.16.0.1 -m -w 1',
    '-a -t 10.96.0.1:80 -r 172.16.0.1:8080 -m -w 2147483648',
    '-a -t 10.96.0.1:80 -r 172.16.0.1:8080 -m -w -1',
    '-a -t 10.96.0.1:80 -r 172.16.0.1:8080 -w 1 -m',
    '-a -t 10.96.0.1:80 -r 172.16.0.1:8080 -i -w 1 --tun-type gue',
    '-a -t 10.96.0.1:80 -r 172.16.0.1:8080 -x -w 1',
    '-e -t 10.96.0.1:80 -r 172.16.0.1:8080 -m -w 1',
  ])('leaves %s to parseArgs', (line) => {
    expect(parseSaveLine(line.split(' '))).toBeUndefined();
  });
});
