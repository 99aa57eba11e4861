// Inside the QEMU VM only (real kernel, real ipset 7.17). Sets created by the real Ipset must
// have kube-proxy's types and headers, members must sync as deltas, a staying member must never
// be missing, an unchanged sync must start no process, and FakeIpset must fail like ipset does.
// Addresses: 10.96.0.0/12 cluster IPs, 203.0.113.0/24 LBs, 198.51.100.0/24 sources, fd00::/8.
import { spawn } from 'node:child_process';
import { ExecError } from '../../lib/errors';
import { ChildProcessExec, checkExec } from '../../lib/kernel/exec';
import { CountingExec } from '../../testkit/counting-exec';
import { FakeIpset } from '../../testkit/kernel/fake-ipset';
import { createIpset } from '../../lib/kernel/ipset/ipset-restore';
import { formatIpsetState, parseIpsetSave } from '../../lib/kernel/ipset/ipset-text';
import { planIpsets } from '../../lib/plan/ipsets';
import {
  IpsetMember,
  IpsetProto,
  entriesIpPortNet,
  entryIp,
  entryIpPort,
  entryIpPortIp,
  entryIpPortNet,
  entryPort,
} from '../../lib/model/ipset';

const run = (cmd: string, args: string[], stdin?: string) => new ChildProcessExec().run(cmd, args, stdin);
const sh = async (script: string) => checkExec('bash', ['-c', script], await run('bash', ['-c', script])).stdout;

/** Removes every KUBE-* chain and jump of all four iptables binaries (other VM tests leave them). */
const RESET_KUBE_IPTABLES = `for b in iptables-legacy iptables-nft ip6tables-legacy ip6tables-nft; do for t in nat filter; do
  $b-save -t $t 2>/dev/null | grep -E '^-A (PREROUTING|INPUT|FORWARD|OUTPUT|POSTROUTING) .*-j KUBE-' | sed 's/^-A/-D/' | while read -r r; do eval "$b -t $t $r"; done
  for c in $($b-save -t $t 2>/dev/null | sed -n 's/^:\\(KUBE-[^ ]*\\) .*/\\1/p'); do $b -t $t -F $c; done
  for c in $($b-save -t $t 2>/dev/null | sed -n 's/^:\\(KUBE-[^ ]*\\) .*/\\1/p'); do $b -t $t -X $c; done
done; done`;

async function destroyKubeSets(): Promise<void> {
  await sh(RESET_KUBE_IPTABLES);
  await sh("for s in $(ipset list -n | grep -E '^(KUBE-|T-)'); do ipset destroy $s; done");
}
const destroyTestSets = () => sh("for s in $(ipset list -n | grep -E '^T-'); do ipset destroy $s; done");

const members = () => ({
  CLUSTER_IP: [
    entryIpPort('10.96.0.10', 'udp', 53),
    entryIpPort('10.96.0.10', 'tcp', 53),
    entryIpPort('10.96.0.1', 'tcp', 443),
  ],
  LOOP_BACK: [entryIpPortIp('10.244.1.5', 'tcp', 80, '10.244.1.5')],
  LOAD_BALANCER_SOURCE_CIDR: [
    entryIpPortNet('203.0.113.7', 'tcp', 443, '198.51.100.0/24'),
    entryIpPortNet('203.0.113.7', 'tcp', 443, '198.51.100.9/32'),
  ],
  NODE_PORT_TCP: [entryPort(30080)],
  IPVS_IPS: [entryIp('10.96.0.10'), entryIp('10.96.0.1')],
});

describe('Ipset against the kernel', () => {
  beforeAll(destroyKubeSets);
  afterAll(destroyKubeSets);

  it('creates all 17 sets per family with kube-proxy types and headers, and the members', async () => {
    const exec = new CountingExec(new ChildProcessExec());
    const ipset = createIpset(exec);
    await ipset.observe();
    const v6 = planIpsets('ipv6', {
      CLUSTER_IP: [entryIpPort('FD00::A', 'tcp', 80)],
      NODE_PORT_LOCAL_SCTP: [entryIpPort('fd00::1', 'sctp', 30300)],
    });
    const desired = new Map([...planIpsets('ipv4', members()), ...v6]);
    const r = await ipset.sync(desired);
    expect(exec.count).toBe(2); // save + restore
    expect(r.created.length).toBe(34);

    // `ipset list -t`: type and header of each set, as kube-proxy's create options give them
    const list = await sh('ipset list -t');
    const headers = new Map<string, string>();
    for (const block of list.split('\n\n')) {
      const name = /^Name: (.*)$/m.exec(block)?.[1];
      const type = /^Type: (.*)$/m.exec(block)?.[1];
      const header = /^Header: (.*)$/m.exec(block)?.[1];
      if (name?.startsWith('KUBE-')) headers.set(name, `${type} ${header!.replace(/ bucketsize.*/, '')}`);
    }
    expect(headers.get('KUBE-CLUSTER-IP')).toBe('hash:ip,port family inet hashsize 1024 maxelem 65536');
    expect(headers.get('KUBE-LOOP-BACK')).toBe('hash:ip,port,ip family inet hashsize 1024 maxelem 65536');
    expect(headers.get('KUBE-LOAD-BALANCER-SOURCE-CIDR')).toBe(
      'hash:ip,port,net family inet hashsize 1024 maxelem 65536',
    );
    expect(headers.get('KUBE-IPVS-IPS')).toBe('hash:ip family inet hashsize 1024 maxelem 65536');
    expect(headers.get('KUBE-NODE-PORT-TCP')).toBe('bitmap:port range 0-65535');
    expect(headers.get('KUBE-HEALTH-CHECK-NODE-PORT')).toBe('bitmap:port range 0-65535');
    expect(headers.get('KUBE-6-LOAD-BALANCER-SOURCE-CID')).toBe(
      'hash:ip,port,net family inet6 hashsize 1024 maxelem 65536',
    );
    expect(headers.get('KUBE-6-NODE-PORT-LOCAL-SCTP-HAS')).toBe(
      'hash:ip,port family inet6 hashsize 1024 maxelem 65536',
    );
    // kube-ipvs's record is not the sync's (proxier/ownership-record.ts writes it)
    expect(headers.has('KUBE-IPVS-OWNED')).toBe(false);
    expect(headers.size).toBe(34);

    // members exactly as `ipset save` spells them = our entry strings
    const saved = parseIpsetSave(await sh('ipset save'));
    expect([...saved.get('KUBE-CLUSTER-IP')!.members].sort()).toEqual([
      '10.96.0.1,tcp:443',
      '10.96.0.10,tcp:53',
      '10.96.0.10,udp:53',
    ]);
    expect([...saved.get('KUBE-LOAD-BALANCER-SOURCE-CIDR')!.members].sort()).toEqual([
      '203.0.113.7,tcp:443,198.51.100.0/24',
      '203.0.113.7,tcp:443,198.51.100.9',
    ]);
    expect([...saved.get('KUBE-6-CLUSTER-IP')!.members]).toEqual(['fd00::a,tcp:80']);
    expect([...saved.get('KUBE-NODE-PORT-TCP')!.members]).toEqual(['30080']);

    // the fake, given the same desired state, holds the same
    const fake = new FakeIpset();
    await fake.observe();
    await fake.sync(desired);
    const kube = new Map([...saved].filter(([n]) => n.startsWith('KUBE-')));
    expect(formatIpsetState(kube)).toBe(fake.dump());

    // unchanged: no process at all; a restarted instance that observes first: none either
    exec.reset();
    expect((await ipset.sync(new Map([...planIpsets('ipv4', members()), ...v6]))).execs).toBe(0);
    expect(exec.count).toBe(0);
    const restarted = createIpset(exec);
    await restarted.observe();
    exec.reset();
    expect((await restarted.sync(desired)).execs).toBe(0);
    expect(exec.count).toBe(0);
  });

  it('a member that stays is never absent while other members churn (sampled with ipset test)', async () => {
    // What this proves: over the `ipset test` probes taken (niced, at most 400) while 4 syncs
    // add and delete 500 other members each, the staying member was never found missing, and
    // no restore text named it. The probes only sample; the restore-text check is the
    // exhaustive part (ipset add/del of other elements cannot remove it).
    const ipset = createIpset();
    await ipset.observe();
    const stay = entryIpPort('10.96.0.1', 'tcp', 443);
    const churn = (k: number) =>
      Array.from({ length: 500 }, (_, i) => entryIpPort(`10.${97 + k}.${i >> 8}.${i & 255}`, 'tcp', 80));
    await ipset.sync(planIpsets('ipv4', { CLUSTER_IP: [stay, ...churn(0)] }));

    const probe = spawn('nice', [
      '-n',
      '19',
      'bash',
      '-c',
      `ok=0; bad=0; while [ ! -e /tmp/stop-probe ] && [ $((ok+bad)) -lt 400 ]; do if ipset test KUBE-CLUSTER-IP ${stay} 2>/dev/null; then ok=$((ok+1)); else bad=$((bad+1)); fi; done; echo "$ok $bad"`,
    ]);
    let out = '';
    probe.stdout.on('data', (b: Buffer) => (out += b.toString()));
    const done = new Promise<void>((resolve) => probe.on('close', () => resolve()));
    await new Promise((r) => setTimeout(r, 300));
    const texts: string[] = [];
    for (let k = 1; k <= 4; k++) {
      const r = await ipset.sync(planIpsets('ipv4', { CLUSTER_IP: [stay, ...churn(k % 2)] }));
      expect(r).toMatchObject({ execs: 1, added: 500, deleted: 500 });
      texts.push(r.restoreText);
    }
    await sh('touch /tmp/stop-probe');
    await done;
    const [ok, bad] = out.trim().split(' ').map(Number);
    expect(bad).toBe(0);
    expect(ok).toBeGreaterThan(0);
    for (const t of texts) expect(t.split('\n')).not.toContain(`add KUBE-CLUSTER-IP ${stay}`);
    for (const t of texts) expect(t).not.toContain(stay);
    await sh('rm -f /tmp/stop-probe');
  }, 600_000);
});

const kernelMembers = async (set: string) =>
  [...(parseIpsetSave(await sh('ipset save')).get(set)?.members ?? [])].sort();
const kernelHas = async (set: string, entry: string) => (await run('ipset', ['test', set, entry])).exitCode === 0;

describe('one bad entry never stalls the ipsets (the kernel decides)', () => {
  beforeEach(destroyKubeSets);
  afterAll(destroyKubeSets);

  it('a member ipset refuses is quarantined: every other set and member is applied, the next sync runs nothing', async () => {
    const exec = new CountingExec(new ChildProcessExec());
    const logged: string[] = [];
    const ipset = createIpset(exec, 'ipset', { warn: (m: string) => logged.push(m) });
    await ipset.observe();
    // spelled by hand, as a planner bug would: ipset says "'0' is out of range 1-32"
    const bad = '203.0.113.7,tcp:443,0.0.0.0/0' as IpsetMember;
    const desired = () =>
      planIpsets('ipv4', {
        LOAD_BALANCER_SOURCE_CIDR: [
          entryIpPortNet('203.0.113.7', 'tcp', 443, '198.51.100.0/24'),
          bad,
          entryIpPortNet('203.0.113.7', 'tcp', 443, '192.0.2.0/24'),
        ],
        NODE_PORT_TCP: [entryPort(30080)],
      });
    const r = await ipset.sync(desired());
    expect(r.quarantined).toEqual([
      {
        set: 'KUBE-LOAD-BALANCER-SOURCE-CIDR',
        verb: 'add',
        member: bad,
        reason: 'The value of the CIDR parameter of the IP address is invalid',
      },
    ]);
    expect(logged).toEqual([
      expect.stringContaining(`ipset KUBE-LOAD-BALANCER-SOURCE-CIDR: member ${bad} quarantined`),
    ]);
    expect(await kernelMembers('KUBE-NODE-PORT-TCP')).toEqual(['30080']);
    expect(await kernelMembers('KUBE-LOAD-BALANCER-SOURCE-CIDR')).toEqual([
      '203.0.113.7,tcp:443,192.0.2.0/24',
      '203.0.113.7,tcp:443,198.51.100.0/24',
    ]);
    expect(parseIpsetSave(await sh('ipset save')).size).toBe(17);
    exec.reset();
    expect((await ipset.sync(desired())).execs).toBe(0);
    expect(exec.count).toBe(0);
    expect(logged.length).toBe(1);
  });

  it('a source range 0.0.0.0/0 (or ::/0) is held as two half ranges, and the NodePort sets still exist', async () => {
    const ipset = createIpset();
    await ipset.observe();
    const desired = new Map([
      ...planIpsets('ipv4', {
        LOAD_BALANCER_SOURCE_CIDR: entriesIpPortNet('203.0.113.7', 'tcp', 443, '0.0.0.0/0'),
        NODE_PORT_TCP: [entryPort(30080)],
      }),
      ...planIpsets('ipv6', { LOAD_BALANCER_SOURCE_CIDR: entriesIpPortNet('fd00::7', 'tcp', 443, '::/0') }),
    ]);
    await ipset.sync(desired);
    expect(await kernelMembers('KUBE-LOAD-BALANCER-SOURCE-CIDR')).toEqual([
      '203.0.113.7,tcp:443,0.0.0.0/1',
      '203.0.113.7,tcp:443,128.0.0.0/1',
    ]);
    expect(await kernelMembers('KUBE-6-LOAD-BALANCER-SOURCE-CID')).toEqual([
      'fd00::7,tcp:443,8000::/1',
      'fd00::7,tcp:443,::/1',
    ]);
    expect(await kernelMembers('KUBE-NODE-PORT-TCP')).toEqual(['30080']);
    for (const src of ['1.2.3.4', '198.51.100.9', '255.255.255.255']) {
      expect(await kernelHas('KUBE-LOAD-BALANCER-SOURCE-CIDR', `203.0.113.7,tcp:443,${src}`)).toBe(true);
    }
    expect(await kernelHas('KUBE-LOAD-BALANCER-SOURCE-CIDR', '203.0.113.7,tcp:80,1.2.3.4')).toBe(false);
    // the fake holds the same
    const fake = new FakeIpset();
    await fake.observe();
    await fake.sync(desired);
    const kube = new Map([...parseIpsetSave(await sh('ipset save'))].filter(([n]) => n.startsWith('KUBE-')));
    expect(formatIpsetState(kube)).toBe(fake.dump());
  });

  it('two spellings of one member are one member: re-planning with another spelling never empties the set', async () => {
    const ipset = createIpset();
    await ipset.observe();
    await ipset.sync(planIpsets('ipv4', { CLUSTER_IP: [entryIpPort('10.96.0.10', 'TCP' as IpsetProto, 80)] }));
    await ipset.sync(planIpsets('ipv4', { CLUSTER_IP: [entryIpPort('10.96.0.10', 'tcp', 80)] }));
    expect(await kernelMembers('KUBE-CLUSTER-IP')).toEqual(['10.96.0.10,tcp:80']);
    expect(await kernelHas('KUBE-CLUSTER-IP', '10.96.0.10,tcp:80')).toBe(true);
  });
});

/** One misuse: seed text, then the misuse; expected exit, line, stderr part, state after. */
interface Misuse {
  readonly name: string;
  readonly seed: string;
  readonly misuse: string;
  /** referenced by an iptables rule before the misuse */
  readonly referenced?: string;
  readonly exitCode: number;
  readonly line: number | undefined;
  readonly message: string;
  readonly after: string;
}
const H = 'family inet hashsize 1024 maxelem 65536';
const MISUSES: Misuse[] = [
  {
    name: 'add to a missing set',
    seed: '',
    misuse: 'add T-MISSING 1.2.3.4,tcp:80\n',
    exitCode: 1,
    line: 1,
    message: 'The set with the given name does not exist',
    after: '',
  },
  {
    name: 'bad entry on line 2 drops the unsent line-1 add',
    seed: `create T-A hash:ip,port ${H}\n`,
    misuse: 'add T-A 1.2.3.4,tcp:81\nadd T-A 1.2.3.4\n',
    exitCode: 1,
    line: 2,
    message: 'Second element is missing from 1.2.3.4.',
    after: 'create T-A hash:ip,port family inet\n',
  },
  {
    name: 'same name, other type, even with -exist',
    seed: `create T-A hash:ip,port ${H}\n`,
    misuse: `create T-A hash:ip ${H}\n`,
    exitCode: 1,
    line: 1,
    message: 'set with the same name already exists',
    after: 'create T-A hash:ip,port family inet\n',
  },
  {
    name: 'IPv6 entry in an inet set',
    seed: `create T-A hash:ip,port ${H}\n`,
    misuse: 'add T-A fd00::1,tcp:80\n',
    exitCode: 1,
    line: 1,
    message: 'resolving to IPv4 address failed',
    after: 'create T-A hash:ip,port family inet\n',
  },
  {
    name: 'bitmap:port entry that is not a port (no line named)',
    seed: 'create T-P bitmap:port range 0-65535\n',
    misuse: 'add T-P 1.2.3.4\n',
    exitCode: 1,
    line: undefined,
    message: "'1.2.3.4' is invalid as number",
    after: 'create T-P bitmap:port\n',
  },
  {
    name: 'unknown command after a create: the create stays',
    seed: '',
    misuse: `create T-Y hash:ip ${H}\nbogus T-Y\n`,
    exitCode: 2,
    line: undefined,
    message: 'unknown argument bogus',
    after: 'create T-Y hash:ip family inet\n',
  },
  {
    name: 'error in an add batch after a create',
    seed: '',
    misuse: `create T-X hash:ip ${H}\nadd T-X 1.1.1.1\nadd T-X 1.1.1.1,tcp:2\n`,
    exitCode: 1,
    line: 3,
    message: 'Elem separator in 1.1.1.1,tcp:2, but settype hash:ip supports none.',
    after: 'create T-X hash:ip family inet\n',
  },
  {
    name: 'a /0 net is refused by the kernel: the adds before it in the batch stay',
    seed: `create T-N hash:ip,port,net ${H}\n`,
    misuse: 'add T-N 1.2.3.4,tcp:80,10.0.0.0/8\nadd T-N 1.2.3.4,tcp:80,0.0.0.0/0\nadd T-N 1.2.3.4,tcp:80,10.1.0.0/16\n',
    exitCode: 1,
    line: 2,
    message: 'Error in line 2: The value of the CIDR parameter of the IP address is invalid',
    after: 'create T-N hash:ip,port,net family inet\nadd T-N 1.2.3.4,tcp:80,10.0.0.0/8\n',
  },
  {
    name: 'an IPv6 ::/0 net likewise; its two halves are accepted',
    seed: 'create T-6 hash:ip,port,net family inet6 hashsize 1024 maxelem 65536\n',
    misuse: 'add T-6 fd00::1,tcp:80,::/1\nadd T-6 fd00::1,TCP:80,8000::/1\ndel T-6 fd00::1,tcp:80,::/0\n',
    exitCode: 1,
    line: 3,
    message: 'The value of the CIDR parameter of the IP address is invalid',
    after: 'create T-6 hash:ip,port,net family inet6\nadd T-6 fd00::1,tcp:80,8000::/1\nadd T-6 fd00::1,tcp:80,::/1\n',
  },
  {
    name: 'a prefix beyond 32 is a syntax error: the unsent batch is dropped',
    seed: `create T-N hash:ip,port,net ${H}\n`,
    misuse: 'add T-N 1.2.3.4,tcp:80,10.2.0.0/16\nadd T-N 1.2.3.4,tcp:80,10.0.0.0/33\n',
    exitCode: 1,
    line: 2,
    message: "Syntax error: '33' is out of range 0-32",
    after: 'create T-N hash:ip,port,net family inet\n',
  },
  {
    name: 'destroy a set an iptables rule uses',
    seed: `create T-R hash:ip ${H}\n`,
    referenced: 'T-R',
    misuse: 'destroy T-R\n',
    exitCode: 1,
    line: 1,
    message: 'Set cannot be destroyed: it is in use by a kernel component',
    after: 'create T-R hash:ip family inet\n',
  },
];

type Target = {
  restore(text: string): Promise<void>;
  dump(): Promise<string>;
  reference(set: string): Promise<void>;
  cleanup(): Promise<void>;
};

const fake = (): Target => {
  const f = new FakeIpset();
  return {
    restore: async (t) => f.applyRestore(t, true),
    dump: async () => f.dump(),
    reference: async (s) => f.addReference(s),
    cleanup: async () => undefined,
  };
};
const kernel = (): Target => {
  const refs: string[] = [];
  return {
    restore: async (t) => {
      checkExec('ipset', ['restore', '-exist'], await run('ipset', ['restore', '-exist'], t), (s) => {
        const m = /Error in line (\d+):/.exec(s);
        return m ? Number(m[1]) : undefined;
      });
    },
    dump: async () => {
      const all = parseIpsetSave(await sh('ipset save'));
      return formatIpsetState(new Map([...all].filter(([n]) => n.startsWith('T-'))));
    },
    reference: async (s) => {
      refs.push(s);
      await sh(`iptables -A INPUT -m set --match-set ${s} dst -j ACCEPT`);
    },
    cleanup: async () => {
      for (const s of refs) await sh(`iptables -D INPUT -m set --match-set ${s} dst -j ACCEPT`);
      await destroyTestSets();
    },
  };
};

describe.each([
  ['fake', fake],
  ['kernel', kernel],
] as const)('ipset misuse (%s)', (_which, make) => {
  it.each(MISUSES.map((m) => [m.name, m] as const))('%s', async (_n, m) => {
    const t = make();
    try {
      if (m.seed) await t.restore(m.seed);
      if (m.referenced) await t.reference(m.referenced);
      const e = await t.restore(m.misuse).then(
        () => undefined,
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(ExecError);
      const err = e as ExecError;
      expect({ exitCode: err.exitCode, line: err.line }).toEqual({ exitCode: m.exitCode, line: m.line });
      expect(err.stderr).toContain(m.message);
      expect(await t.dump()).toBe(m.after);
    } finally {
      await t.cleanup();
    }
  });
});

// The ownership record's kernel vocabulary (proxier/ownership-record.ts): comments, an -exist add
// replacing one, the rebuild beside it and `swap`, a full set, a comment on a set without them.
// Each step runs through the real `ipset restore -exist` and FakeIpset; both must agree.
describe('the ownership record: FakeIpset against the kernel (comments, swap, maxelem)', () => {
  beforeAll(destroyTestSets);
  afterAll(destroyTestSets);

  const normalize = (save: string) =>
    save
      .split('\n')
      .filter((l) => / T-REC(-NEW)? /.test(l + ' '))
      .map((l) => l.replace(/ initval 0x[0-9a-f]+/, ''))
      .sort();

  it('agree step by step, refusals included', async () => {
    const fake = new FakeIpset();
    const steps = [
      'create T-REC hash:ip,port family inet hashsize 1024 maxelem 4 comment\nadd T-REC 10.96.0.10,tcp:80 comment "rr/0x0000/0"\nadd T-REC 10.96.0.11,udp:53 comment "rr/0x0000/0|wlc/0x0000/0"\n',
      // an -exist add replaces the comment
      'add T-REC 10.96.0.11,udp:53 comment "wlc/0x0000/0"\n',
      'del T-REC 10.96.0.10,tcp:80\nadd T-REC 10.96.0.12,tcp:443 comment "sh/0x0010/0"\n',
      // the rebuild: a bigger set filled beside it, swapped in, the old one destroyed
      'create T-REC-NEW hash:ip,port family inet hashsize 1024 maxelem 8 comment\nflush T-REC-NEW\nadd T-REC-NEW 10.96.0.11,udp:53 comment "wlc/0x0000/0"\nadd T-REC-NEW 10.96.0.12,tcp:443 comment "sh/0x0010/0"\nswap T-REC-NEW T-REC\ndestroy T-REC-NEW\n',
      // full: 8 members fit, the 9th is refused
      Array.from({ length: 7 }, (_, i) => `add T-REC 10.96.1.${i},tcp:80 comment "rr/0x0000/0"`).join('\n') + '\n',
      // an add without comment clears the comment
      'add T-REC 10.96.0.11,udp:53\n',
      // a set without comments refuses one
      'create T-PLAIN hash:ip,port family inet hashsize 1024 maxelem 65536\nadd T-PLAIN 10.96.0.10,tcp:80 comment "rr/0x0000/0"\n',
    ];
    const outcome = async (f: () => Promise<unknown>) => {
      try {
        await f();
        return 'ok';
      } catch (e) {
        return e instanceof ExecError ? `exit ${e.exitCode}: ${e.stderr.trim()}` : String(e);
      }
    };
    const real = createIpset(new ChildProcessExec());
    for (const text of steps) {
      const kernel = await outcome(() => real.write(text));
      const twin = await outcome(() => fake.restore(text));
      expect({ text, twin }).toEqual({ text, twin: kernel });
      expect(normalize(await fake.save())).toEqual(normalize(await sh('ipset save')));
    }
    const saved = normalize(await sh('ipset save'));
    expect(saved.filter((l) => l.startsWith('create '))).toEqual([
      'create T-REC hash:ip,port family inet hashsize 1024 maxelem 8 comment bucketsize 12',
    ]);
    expect(saved).toContain('add T-REC 10.96.0.12,tcp:443 comment "sh/0x0010/0"');
    expect(saved).toContain('add T-REC 10.96.0.11,udp:53');
  });
});
