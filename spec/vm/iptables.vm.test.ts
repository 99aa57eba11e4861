// Inside the QEMU VM only (real kernel, iptables 1.8.9 legacy and nft). The KUBE-* chains the
// real Iptables writes must read back from iptables-save exactly as written below (by hand, in
// iptables-save's own spelling: sorted chains, `! -s` first, marks as 0x4000, --set-xmark,
// --reject-with, ipvs --vproto as a number), foreign chains must survive, jumps must not be
// duplicated, exec counts must hold, and FakeIptables must fail like the binaries do.
// Addresses: 10.244.0.0/16 pods, 203.0.113.0/24 LBs (RFC 5737), fd00::/8.
import { ExecError } from '../../lib/errors';
import { ChildProcessExec, checkExec } from '../../lib/kernel/exec';
import { CountingExec } from '../../testkit/counting-exec';
import { FakeIpset } from '../../testkit/kernel/fake-ipset';
import { createIpset } from '../../lib/kernel/ipset/ipset-restore';
import { detectBackend } from '../../lib/kernel/iptables/detect-backend';
import { FakeIptables } from '../../testkit/kernel/fake-iptables';
import { createIptables, iptablesErrorLine } from '../../lib/kernel/iptables/iptables-restore';
import { IptablesBackend } from '../../lib/kernel/iptables/iptables';
import { planIptables } from '../../lib/plan/iptables';
import { planIpsets } from '../../lib/plan/ipsets';
import { SetKey } from '../../lib/model/names';

const exec0 = new ChildProcessExec();
const sh = async (script: string) => checkExec('bash', ['-c', script], await exec0.run('bash', ['-c', script])).stdout;
const saveOf = async (bin: string, table: string) =>
  (await sh(`${bin} -t ${table}`))
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'))
    .join('\n') + '\n';

const LIVE: SetKey[] = [
  'LOOP_BACK',
  'CLUSTER_IP',
  'EXTERNAL_IP',
  'LOAD_BALANCER',
  'LOAD_BALANCER_FW',
  'LOAD_BALANCER_SOURCE_CIDR',
  'NODE_PORT_TCP',
];
const PLAN = planIptables({
  family: 'ipv4',
  clusterCIDR: '10.244.0.0/16',
  nonEmptySets: new Set(LIVE),
  lbOutFilter: [{ lbIP: '203.0.113.7', proto: 'tcp', port: 443 }],
  randomFully: true,
});

const EXPECTED_NAT = `*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-LOAD-BALANCER - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-NODE-PORT - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-SERVICES - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-LOAD-BALANCER -j KUBE-MARK-MASQ
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-NODE-PORT -p tcp -m comment --comment "Kubernetes nodeport TCP port for masquerade purpose" -m set --match-set KUBE-NODE-PORT-TCP dst -j KUBE-MARK-MASQ
-A KUBE-POSTROUTING -m comment --comment "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose" -m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
-A KUBE-SERVICES -s 127.0.0.0/8 -j RETURN
-A KUBE-SERVICES -m comment --comment "Kubernetes service lb portal" -m set --match-set KUBE-LOAD-BALANCER dst,dst -j KUBE-LOAD-BALANCER
-A KUBE-SERVICES ! -s 10.244.0.0/16 -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ
-A KUBE-SERVICES -m comment --comment "Kubernetes service external ip + port for masquerade and filter purpose" -m set --match-set KUBE-EXTERNAL-IP dst,dst -j KUBE-MARK-MASQ
-A KUBE-SERVICES -m comment --comment "Kubernetes service external ip + port for masquerade and filter purpose" -m set --match-set KUBE-EXTERNAL-IP dst,dst -m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL -j ACCEPT
-A KUBE-SERVICES -m comment --comment "Kubernetes service external ip + port for masquerade and filter purpose" -m set --match-set KUBE-EXTERNAL-IP dst,dst -m addrtype --dst-type LOCAL -j ACCEPT
-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT
-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT
-A KUBE-SERVICES -m set --match-set KUBE-LOAD-BALANCER dst,dst -j ACCEPT
COMMIT
`;

const EXPECTED_FILTER = `*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:FOREIGN - [0:0]
:KUBE-FORWARD - [0:0]
:KUBE-IPVS-FILTER - [0:0]
:KUBE-IPVS-OUT-FILTER - [0:0]
:KUBE-NODE-PORT - [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
:KUBE-SOURCE-RANGES-FIREWALL - [0:0]
-A INPUT -m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER
-A INPUT -m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL
-A INPUT -m comment --comment "kubernetes health check rules" -j KUBE-NODE-PORT
-A INPUT -j FOREIGN
-A FORWARD -m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A OUTPUT -m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-OUT-FILTER
-A FOREIGN -s 192.0.2.1/32 -j ACCEPT
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A KUBE-IPVS-FILTER -m set --match-set KUBE-LOAD-BALANCER dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-CLUSTER-IP dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-EXTERNAL-IP dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-EXTERNAL-IP-LOCAL dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-HEALTH-CHECK-NODE-PORT dst -j RETURN
-A KUBE-IPVS-FILTER -m conntrack --ctstate NEW -m set --match-set KUBE-IPVS-IPS dst -j REJECT --reject-with icmp-port-unreachable
-A KUBE-IPVS-OUT-FILTER -s 203.0.113.7/32 -m ipvs --vproto 6 --vaddr 203.0.113.7 --vport 443 -j DROP
-A KUBE-NODE-PORT -m comment --comment "Kubernetes health check node port" -m set --match-set KUBE-HEALTH-CHECK-NODE-PORT dst -j ACCEPT
-A KUBE-PROXY-FIREWALL -m comment --comment "Kubernetes service load balancer ip + port for load balancer with sourceRange" -m set --match-set KUBE-LOAD-BALANCER-FW dst,dst -j KUBE-SOURCE-RANGES-FIREWALL
-A KUBE-SOURCE-RANGES-FIREWALL -m comment --comment "Kubernetes service load balancer ip + port + source cidr for packet filter purpose" -m set --match-set KUBE-LOAD-BALANCER-SOURCE-CIDR dst,dst,src -j RETURN
-A KUBE-SOURCE-RANGES-FIREWALL -j DROP
COMMIT
`;

/** Removes every KUBE-* chain and jump of all four iptables binaries (other VM tests leave them). */
const RESET_KUBE_IPTABLES = `for b in iptables-legacy iptables-nft ip6tables-legacy ip6tables-nft; do for t in nat filter; do
  $b-save -t $t 2>/dev/null | grep -E '^-A (PREROUTING|INPUT|FORWARD|OUTPUT|POSTROUTING) .*-j KUBE-' | sed 's/^-A/-D/' | while read -r r; do eval "$b -t $t $r"; done
  for c in $($b-save -t $t 2>/dev/null | sed -n 's/^:\\(KUBE-[^ ]*\\) .*/\\1/p'); do $b -t $t -F $c; done
  for c in $($b-save -t $t 2>/dev/null | sed -n 's/^:\\(KUBE-[^ ]*\\) .*/\\1/p'); do $b -t $t -X $c; done
done; done`;

afterAll(() => sh(RESET_KUBE_IPTABLES));

beforeAll(async () => {
  await sh(RESET_KUBE_IPTABLES);
  // the sets the rules name (the kernel refuses rules on missing sets)
  const ipset = createIpset();
  await ipset.observe();
  await ipset.sync(new Map([...planIpsets('ipv4', {}), ...planIpsets('ipv6', {})]));
});

describe('backend detection on this VM', () => {
  it('no kubelet chains: nft unless legacy holds more rules', async () => {
    expect((await detectBackend(exec0, 'ipv4')).backend).toBe('nft');
    await sh('iptables-legacy -t filter -N T-DETECT && iptables-legacy -A T-DETECT -j ACCEPT');
    expect(await detectBackend(exec0, 'ipv4')).toMatchObject({ backend: 'legacy', execs: 3 });
    await sh('iptables-nft -t mangle -N KUBE-IPTABLES-HINT');
    expect(await detectBackend(exec0, 'ipv4')).toMatchObject({ backend: 'nft', execs: 1 });
    await sh(
      'iptables-nft -t mangle -X KUBE-IPTABLES-HINT && iptables-legacy -F T-DETECT && iptables-legacy -X T-DETECT',
    );
  });
});

describe.each(['legacy', 'nft'] as const)('Iptables against the kernel (%s)', (backend: IptablesBackend) => {
  const bin = (tool: string) => `iptables-${backend}${tool}`;

  it('writes the KUBE-* chains exactly, keeps a foreign chain, never duplicates a jump, counts execs', async () => {
    await sh(
      `${bin('')} -t filter -N FOREIGN && ${bin('')} -A FOREIGN -s 192.0.2.1 -j ACCEPT && ${bin('')} -A INPUT -j FOREIGN`,
    );
    const exec = new CountingExec(exec0);
    const ipt = createIptables({ family: 'ipv4', backend, exec });
    const first = await ipt.sync(PLAN);
    expect(first).toMatchObject({ execs: 3, wrote: true });
    expect(exec.calls.map((c) => [c.cmd, ...c.args].join(' '))).toEqual([
      `${bin('-save')} -t nat`,
      `${bin('-save')} -t filter`,
      `${bin('-restore')} --noflush -w 5 -W 100000`,
    ]);
    expect(await saveOf(bin('-save'), 'nat')).toBe(EXPECTED_NAT);
    expect(await saveOf(bin('-save'), 'filter')).toBe(EXPECTED_FILTER);

    exec.reset();
    expect(await ipt.sync(PLAN)).toMatchObject({ execs: 0, wrote: false });
    expect(exec.count).toBe(0);

    // a restarted daemon (new instance): checks the jumps, finds them all, rewrites the chains
    const again = await createIptables({ family: 'ipv4', backend, exec }).sync(PLAN);
    expect(again.insertedJumps).toEqual([]);
    expect(await saveOf(bin('-save'), 'nat')).toBe(EXPECTED_NAT);
    expect(await saveOf(bin('-save'), 'filter')).toBe(EXPECTED_FILTER);

    // a change is one restore; rules of emptied sets go away, foreign stays
    exec.reset();
    const smaller = planIptables({
      family: 'ipv4',
      clusterCIDR: '10.244.0.0/16',
      nonEmptySets: new Set<SetKey>(['CLUSTER_IP']),
      randomFully: true,
    });
    expect((await ipt.sync(smaller)).execs).toBe(1);
    const filter = await saveOf(bin('-save'), 'filter');
    expect(filter).not.toContain('KUBE-LOAD-BALANCER-FW');
    expect(filter).not.toContain('KUBE-IPVS-OUT-FILTER -s');
    expect(filter).toContain('-A FOREIGN -s 192.0.2.1/32 -j ACCEPT');
    expect(filter).toContain('-A INPUT -j FOREIGN');
  });

  it('an LB IP or interface name carrying a newline and a rule never reaches rule text', async () => {
    // each line of the text it would make is valid on its own
    const evil = '203.0.113.7 -j DROP\n-A INPUT -j DROP\n-A KUBE-IPVS-OUT-FILTER -s 203.0.113.7';
    const ipt = createIptables({ family: 'ipv4', backend });
    // a plan whose rule text carries the injection (as today's planner writes it) is refused by the writer
    const forged = {
      ...PLAN,
      filter: { ...PLAN.filter, rules: [...PLAN.filter.rules, `-A KUBE-IPVS-OUT-FILTER -s ${evil} -j DROP`] },
    };
    for (let i = 0; i < 2; i++) {
      const e = await ipt.sync(forged).then(
        () => undefined,
        (x: unknown) => x,
      );
      expect(await saveOf(bin('-save'), 'filter')).not.toContain('-A INPUT -j DROP');
      expect(e).toMatchObject({ code: 'KIPVS_UNSAFE_RULE_TEXT' });
    }
    // and the planner refuses the raw values, naming the field
    const plan = (over: object) => () =>
      planIptables({ family: 'ipv4', nonEmptySets: new Set<SetKey>(['CLUSTER_IP']), randomFully: true, ...over });
    expect(
      plan({
        lbOutFilter: [
          { lbIP: '203.0.113.8', proto: 'tcp', port: 443 },
          { lbIP: evil, proto: 'tcp', port: 443 },
        ],
      }),
    ).toThrow(expect.objectContaining({ code: 'KIPVS_INVALID_PLAN_INPUT', field: 'lbOutFilter[1].lbIP' }));
    expect(plan({ localDetector: { kind: 'BridgeInterface', iface: 'cbr0\n-A INPUT -j DROP' } })).toThrow(
      expect.objectContaining({ code: 'KIPVS_INVALID_PLAN_INPUT', field: 'localDetector.iface' }),
    );
    expect(await saveOf(bin('-save'), 'filter')).not.toContain('-A INPUT -j DROP');
  });

  it('a chain flushed behind our back (iptables -F KUBE-SERVICES) is rewritten by the next periodic verify', async () => {
    const ipt = createIptables({ family: 'ipv4', backend });
    await ipt.sync(PLAN);
    expect(await saveOf(bin('-save'), 'nat')).toBe(EXPECTED_NAT);
    await sh(`${bin('')} -t nat -F KUBE-SERVICES`);
    expect(await saveOf(bin('-save'), 'nat')).not.toContain('-A KUBE-SERVICES');
    // an ordinary sync of an unchanged plan does not look
    expect(await ipt.sync(PLAN)).toMatchObject({ execs: 0, wrote: false });
    const r = await ipt.sync(PLAN, { verify: true });
    expect(r).toMatchObject({ execs: 3, wrote: true });
    expect(r.repaired).toEqual([expect.stringMatching(/^nat KUBE-SERVICES: 0 of [1-9]\d* rules$/)]);
    expect(await saveOf(bin('-save'), 'nat')).toBe(EXPECTED_NAT);
    expect(await saveOf(bin('-save'), 'filter')).toBe(EXPECTED_FILTER);
    // and a verify that finds nothing costs two saves
    expect(await ipt.sync(PLAN, { verify: true })).toMatchObject({ execs: 2, wrote: false, repaired: [] });
  });

  it('IPv6 through ip6tables: ::1/128 and KUBE-6- sets', async () => {
    const ipt = createIptables({ family: 'ipv6', backend });
    const plan = planIptables({
      family: 'ipv6',
      nonEmptySets: new Set<SetKey>(['CLUSTER_IP']),
      lbOutFilter: [{ lbIP: 'fd00::7', proto: 'udp', port: 53 }],
      randomFully: true,
    });
    expect((await ipt.sync(plan)).wrote).toBe(true);
    const nat = await saveOf(`ip6tables-${backend}-save`, 'nat');
    expect(nat).toContain('-A KUBE-SERVICES -s ::1/128 -j RETURN\n');
    expect(nat).toContain('-m set --match-set KUBE-6-CLUSTER-IP src,dst -j KUBE-MARK-MASQ\n');
    expect(nat).toContain('-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES\n');
    const filter = await saveOf(`ip6tables-${backend}-save`, 'filter');
    expect(filter).toContain(
      '-A KUBE-IPVS-OUT-FILTER -s fd00::7/128 -m ipvs --vproto 17 --vaddr fd00::7 --vport 53 -j DROP\n',
    );
    expect(filter).toContain('-m set --match-set KUBE-6-IPVS-IPS dst -j REJECT');
  });
});

/** Misuse of iptables-restore --noflush: same exit code, line and resulting chain on fake and kernel. */
interface Misuse {
  readonly name: string;
  readonly text: string;
  readonly exit: { legacy: number; nft: number };
  readonly line: { legacy: number; nft: number };
  /** rules of filter T-A after (undefined = chain absent) */
  readonly tA: string[] | undefined;
}
const MISUSES: Misuse[] = [
  {
    name: 'jump to a missing chain',
    text: '*filter\n:T-A - [0:0]\n-A T-A -j T-MISSING\nCOMMIT\n',
    exit: { legacy: 2, nft: 2 },
    line: { legacy: 3, nft: 4 },
    tA: undefined,
  },
  {
    name: '-A to a missing chain',
    text: '*filter\n-A T-NOCHAIN -j ACCEPT\nCOMMIT\n',
    exit: { legacy: 1, nft: 1 },
    line: { legacy: 2, nft: 2 },
    tA: undefined,
  },
  {
    name: 'deleting a referenced chain',
    text: '*filter\n:T-A - [0:0]\n:T-B - [0:0]\n-A T-A -j T-B\nCOMMIT\n*filter\n-X T-B\nCOMMIT\n',
    exit: { legacy: 1, nft: 4 },
    line: { legacy: 7, nft: 7 },
    tA: ['-A T-A -j T-B'],
  },
  {
    name: 'deleting a non-empty chain',
    text: '*filter\n:T-A - [0:0]\n-A T-A -j ACCEPT\n-X T-A\nCOMMIT\n',
    exit: { legacy: 1, nft: 4 },
    line: { legacy: 4, nft: 4 },
    tA: undefined,
  },
  {
    name: '-N of an existing chain',
    text: '*filter\n-N T-A\n-N T-A\nCOMMIT\n',
    exit: { legacy: 1, nft: 1 },
    line: { legacy: 3, nft: 3 },
    tA: undefined,
  },
  {
    name: 'a failing later table keeps the committed earlier one',
    text: '*filter\n:T-A - [0:0]\n-A T-A -j ACCEPT\nCOMMIT\n*nat\n:T-A - [0:0]\n-A T-A -j T-NOPE\nCOMMIT\n',
    exit: { legacy: 2, nft: 2 },
    line: { legacy: 7, nft: 8 },
    tA: ['-A T-A -j ACCEPT'],
  },
  {
    name: 'a missing ipset',
    text: '*filter\n:T-A - [0:0]\n-A T-A -m set --match-set T-NOSET dst -j ACCEPT\nCOMMIT\n',
    exit: { legacy: 2, nft: 2 },
    line: { legacy: 3, nft: 3 },
    tA: undefined,
  },
];

interface Target {
  restore(text: string): Promise<void>;
  chainRules(chain: string): Promise<string[] | undefined>;
  cleanup(): Promise<void>;
}

const fake = (backend: IptablesBackend): Target => {
  // linked to a FakeIpset holding no T-* set, like the kernel in this test
  const f = new FakeIptables({ flavor: backend, ipsets: new FakeIpset() });
  return {
    restore: async (t) => f.applyRestore(t, true),
    chainRules: async (c) => f.rules('filter', c),
    cleanup: async () => undefined,
  };
};
const kernel = (backend: IptablesBackend): Target => ({
  restore: async (t) => {
    const bin = `iptables-${backend}-restore`;
    checkExec(bin, ['--noflush'], await exec0.run(bin, ['--noflush'], t), iptablesErrorLine);
  },
  chainRules: async (c) => {
    const save = await saveOf(`iptables-${backend}-save`, 'filter');
    if (!save.includes(`:${c} `)) return undefined;
    return save.split('\n').filter((l) => l.startsWith(`-A ${c} `));
  },
  cleanup: async () => {
    for (const table of ['filter', 'nat']) {
      await sh(
        `for c in $(iptables-${backend}-save -t ${table} | sed -n 's/^:\\(T-[^ ]*\\) .*/\\1/p'); do iptables-${backend} -t ${table} -F $c; done; ` +
          `for c in $(iptables-${backend}-save -t ${table} | sed -n 's/^:\\(T-[^ ]*\\) .*/\\1/p'); do iptables-${backend} -t ${table} -X $c; done`,
      );
    }
  },
});

describe.each([
  ['fake', 'legacy', fake],
  ['kernel', 'legacy', kernel],
  ['fake', 'nft', fake],
  ['kernel', 'nft', kernel],
] as const)('iptables-restore misuse (%s, %s)', (_which, backend, make) => {
  it.each(MISUSES.map((m) => [m.name, m] as const))('%s', async (_n, m) => {
    const t = make(backend);
    try {
      const e = await t.restore(m.text).then(
        () => undefined,
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(ExecError);
      const err = e as ExecError;
      expect({ exit: err.exitCode, line: err.line }).toEqual({ exit: m.exit[backend], line: m.line[backend] });
      expect(await t.chainRules('T-A')).toEqual(m.tA);
    } finally {
      await t.cleanup();
    }
  });
});
