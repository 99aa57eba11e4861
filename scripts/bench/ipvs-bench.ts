// One side of `make bench`, run inside a fresh VM boot: load the table from empty, then
// dump it. Prints one JSON line per measurement to stdout and to $BENCH_OUT if set.
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { openIpvs } from '../../lib/kernel/ipvs/ipvs-netlink';
import { buildBenchTable } from './ipvs-table';

const [side = 'ours', servicesArg = '10000', destsArg = '10'] = process.argv.slice(2);
const services = Number(servicesArg);
const dests = Number(destsArg);

function record(what: string, seconds: number, extra: Record<string, unknown> = {}): void {
  const line = JSON.stringify({ side, what, services, dests, seconds, ...extra });
  console.log(line);
  if (process.env.BENCH_OUT) appendFileSync(process.env.BENCH_OUT, line + '\n');
}

const now = (): number => Number(process.hrtime.bigint()) / 1e9;

const MOBY_IPVS = process.env.BENCH_MOBY_IPVS ?? path.resolve(__dirname, 'peer', 'moby-ipvs-load');

/**
 * moby/ipvs's load of the same-sized table (scripts/bench/peer: one request at a time, each
 * acked), in a fresh network namespace deleted afterwards; its seconds, or undefined (with a
 * line saying why) when the peer is not built.
 */
function mobyLoad(services: number, dests: number): number | undefined {
  if (!existsSync(MOBY_IPVS)) {
    console.error(
      `${MOBY_IPVS} not built (scripts/bench/run.sh builds it when golang-go and golang-github-docker-docker-dev are installed): -R has no peer`,
    );
    return undefined;
  }
  const ns = 'bench-cli-peer';
  const sh = (args: string[]): string => execFileSync(args[0]!, args.slice(1), { encoding: 'utf8' });
  sh(['ip', 'netns', 'add', ns]);
  try {
    // a namespace whose loopback is down has no local routing table: NEW_DEST is EINVAL
    sh(['ip', '-n', ns, 'link', 'set', 'lo', 'up']);
    return (
      JSON.parse(sh(['ip', 'netns', 'exec', ns, MOBY_IPVS, String(services), String(dests)])) as { seconds: number }
    ).seconds;
  } finally {
    sh(['ip', 'netns', 'del', ns]);
  }
}

function countServices(): { services: number; dests: number } {
  const saved = execFileSync('ipvsadm', ['-Sn'], { encoding: 'utf8', maxBuffer: 1 << 30 });
  let s = 0;
  let d = 0;
  for (const l of saved.split('\n')) {
    if (l.startsWith('-A')) s++;
    else if (l.startsWith('-a')) d++;
  }
  return { services: s, dests: d };
}

async function main(): Promise<void> {
  const table = buildBenchTable(services, dests);
  if (side === 'ipvsadm') {
    const file = '/tmp/bench.rules';
    writeFileSync(file, table.restoreText);
    let t = now();
    const r = spawnSync('sh', ['-c', `ipvsadm -R < ${file}`], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error('ipvsadm -R failed');
    record('load', now() - t);
    t = now();
    execFileSync('sh', ['-c', 'ipvsadm -Sn > /tmp/bench.saved']);
    record('dump', now() - t);
  } else if (side === 'ours') {
    const ipvs = await openIpvs();
    let t = now();
    const results = await ipvs.run(table.ops);
    const failed = results.filter((x) => !x.ok).length;
    record('load', now() - t, { failed });
    t = now();
    const all = await ipvs.listAll();
    const listed = all.reduce((n, e) => n + e.dests.length, 0);
    record('dump', now() - t, { listedServices: all.length, listedDests: listed });
    ipvs.close();
    if (failed || all.length !== services || listed !== services * dests) throw new Error('incomplete load or dump');
  } else if (side === 'cli') {
    // our ipvsadm-compatible CLI end to end (process start included, as for ipvsadm), each
    // step beside its peer timed in this same boot: moby/ipvs's load (kube-proxy's library)
    // for -R, real ipvsadm for -Sn and -Ln. BENCH_CPU_PROF=DIR: our CLI runs write V8 CPU
    // profiles there (node --cpu-prof).
    const file = '/tmp/bench.rules';
    writeFileSync(file, table.restoreText);
    const prof = process.env.BENCH_CPU_PROF ? ` --cpu-prof --cpu-prof-dir=${process.env.BENCH_CPU_PROF}` : '';
    const cli = `${process.execPath}${prof} dist/bundle/kube-ipvs.js ipvsadm`;
    const timed = (cmd: string): number => {
      const t0 = now();
      execFileSync('sh', ['-c', cmd], { maxBuffer: 1 << 30 });
      return now() - t0;
    };
    // the peer loads first, in a network namespace of its own that is deleted afterwards:
    // its deleted real servers then sit in that namespace's dest trash, not in ours (a flush
    // in the same namespace would leave 100,000 there for every later add to walk); the
    // kernel frees the namespace's table in its cleanup work, given a few seconds here
    const peer = mobyLoad(services, dests);
    await new Promise((r) => setTimeout(r, 5000));
    // start-up: listing the empty table
    record('list-empty', timed(`${cli} -Ln > /dev/null`), {
      peer: 'ipvsadm -Ln',
      peerSeconds: timed('ipvsadm -Ln > /dev/null'),
    });
    let t = now();
    const r = spawnSync('sh', ['-c', `${cli} -R < ${file}`], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error('kube-ipvs ipvsadm -R failed');
    record('load', now() - t, peer === undefined ? {} : { peer: 'moby/ipvs load', peerSeconds: peer });
    // /proc/net/ip_vs read whole (what the listings below read besides one service dump)
    record('proc-read', timed('cat /proc/net/ip_vs > /dev/null'), {
      peer: 'ipvsadm -Sn',
      peerSeconds: timed('ipvsadm -Sn > /tmp/bench.theirs'),
    });
    t = now();
    execFileSync('sh', ['-c', `${cli} -Sn > /tmp/bench.ours`], { maxBuffer: 1 << 30 });
    record('dump', now() - t, { peer: 'ipvsadm -Sn', peerSeconds: timed('ipvsadm -Sn > /tmp/bench.theirs') });
    const same = spawnSync('sh', ['-c', 'cmp -s /tmp/bench.ours /tmp/bench.theirs']).status === 0;
    record('dump-identical-to-ipvsadm', same ? 1 : 0);
    record('list', timed(`${cli} -Ln > /tmp/bench.ours`), {
      peer: 'ipvsadm -Ln',
      peerSeconds: timed('ipvsadm -Ln > /tmp/bench.theirs'),
    });
    const sameList = spawnSync('sh', ['-c', 'cmp -s /tmp/bench.ours /tmp/bench.theirs']).status === 0;
    record('list-identical-to-ipvsadm', sameList ? 1 : 0);
  } else {
    throw new Error(`unknown side ${side}`);
  }
  const c = countServices();
  if (c.services !== services || c.dests !== services * dests) throw new Error(`kernel has ${c.services}/${c.dests}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
