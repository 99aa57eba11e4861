// `kube-ipvs cleanup` on a node seeded the way kube-proxy (IPVS mode) leaves it, with foreign
// chains, rules, sets and links that must survive; iptables-nft and iptables-legacy, IPv4 and
// IPv6; keepalived's virtual server and a fwmark service stay in the IPVS table. Drives the
// real CLI entry point (the bundle the image ships) as an operator would.
import { run, tryRun, ip } from '../../testkit/netns';
import { FOREIGN, kubeProxyIpsetSeed, kubeProxyIptablesSeed } from '../../testkit/kube-proxy-leftovers';
import { kubeSetNames } from '../../lib/cleanup/cleanup';
import { KUBE_IPVS_BIN } from '../../testkit/processes';

const NODE = process.execPath;
// the CLI runs ~10 iptables/ipset processes; JavaScript in the TCG guest is ~14x slower
const CLI_TIMEOUT_MS = 180_000;
const cli = (...args: string[]) => tryRun(NODE, [KUBE_IPVS_BIN, ...args], undefined, CLI_TIMEOUT_MS);

type Backend = 'nft' | 'legacy';
const bin = (family: 'ipv4' | 'ipv6', b: Backend, tool: 'save' | 'restore') =>
  `${family === 'ipv4' ? 'iptables' : 'ip6tables'}-${b}-${tool}`;

function seed(b: Backend): void {
  run('ipset', ['restore', '-exist'], kubeProxyIpsetSeed());
  for (const f of ['ipv4', 'ipv6'] as const) run(bin(f, b, 'restore'), ['--noflush'], kubeProxyIptablesSeed(f));
  ip('link', 'add', 'kube-ipvs0', 'type', 'dummy');
  ip('addr', 'add', '10.96.0.10/32', 'dev', 'kube-ipvs0');
  if (tryRun('ip', ['link', 'show', FOREIGN.LINK]).status !== 0) ip('link', 'add', FOREIGN.LINK, 'type', 'dummy');
  run('ipvsadm', ['-A', '-t', '10.96.0.10:80', '-s', 'rr']);
  run('ipvsadm', ['-a', '-t', '10.96.0.10:80', '-r', '10.244.1.2:8080', '-m']);
  // not kube-proxy's: keepalived's virtual server on a node address, and a fwmark service
  // (tryRun: a re-seed finds them still there)
  tryRun('ipvsadm', ['-A', '-t', '192.168.1.10:443', '-s', 'wlc']);
  tryRun('ipvsadm', ['-a', '-t', '192.168.1.10:443', '-r', '192.168.1.11:443', '-g']);
  tryRun('ipvsadm', ['-A', '-f', '7', '-s', 'rr']);
  // a NodePort kube-proxy made on the node's address, and keepalived's VIP on another address at
  // the same port number: a port in KUBE-NODE-PORT-TCP vouches only for the node's addresses
  if (tryRun('ip', ['link', 'show', 'node0']).status !== 0) {
    ip('link', 'add', 'node0', 'type', 'dummy');
    ip('addr', 'add', '192.0.2.1/24', 'dev', 'node0');
  }
  run('ipset', ['add', '-exist', 'KUBE-NODE-PORT-TCP', '30443']);
  tryRun('ipvsadm', ['-A', '-t', '192.0.2.1:30443', '-s', 'rr']);
  tryRun('ipvsadm', ['-A', '-t', '198.51.100.100:30443', '-s', 'wlc']);
}

const foreignIpvsStays = () => {
  const table = run('ipvsadm', ['-Ln']);
  expect(table).toMatch(/TCP\s+192\.168\.1\.10:443 wlc\s*\n\s+-> 192\.168\.1\.11:443/);
  expect(table).toMatch(/FWM\s+7 rr/);
  expect(table).toMatch(/TCP\s+198\.51\.100\.100:30443 wlc/);
};

/** Everything cleanup may look at, as text, for a before/after comparison. */
function snapshot(b: Backend): string {
  const parts: string[] = [];
  for (const f of ['ipv4', 'ipv6'] as const) {
    for (const t of ['nat', 'filter']) {
      parts.push(
        run(bin(f, b, 'save'), ['-t', t])
          .split('\n')
          .filter((l) => !l.startsWith('#'))
          .map((l) => l.replace(/\[\d+:\d+\]/, '[]'))
          .join('\n'),
      );
    }
  }
  parts.push(run('ipset', ['list', '-n']), ip('-o', 'link', 'show'), run('ipvsadm', ['-Ln']));
  return parts.join('\n');
}

function wipe(b: Backend): void {
  tryRun('ip', ['link', 'del', FOREIGN.LINK]);
  tryRun('ip', ['link', 'del', 'node0']);
  tryRun('ip', ['link', 'del', 'kube-ipvs0']);
  tryRun('ipvsadm', ['-C']);
  for (const f of ['ipv4', 'ipv6'] as const) {
    const x = f === 'ipv4' ? 'iptables' : 'ip6tables';
    for (const t of ['nat', 'filter']) {
      tryRun(`${x}-${b}`, ['-t', t, '-F']);
      tryRun(`${x}-${b}`, ['-t', t, '-X']);
    }
  }
  tryRun('ipset', ['destroy']);
}

describe.each<[Backend]>([['nft'], ['legacy']])('kube-ipvs cleanup with iptables-%s', (b) => {
  beforeAll(() => seed(b));
  afterAll(() => wipe(b));

  it.each([['--dry-run-typo'], ['--version']])('cleanup %s (an unknown option) exits 2 and changes nothing', (opt) => {
    const before = snapshot(b);
    expect(cli('cleanup', opt).status).toBe(2);
    expect(cli('--cleanup', opt === '--version' ? '--no-such-flag' : opt).status).toBe(2);
    expect(snapshot(b)).toBe(before);
  });

  it('--dry-run lists what it would remove and changes nothing', () => {
    const before = snapshot(b);
    const r = cli('cleanup', '--dry-run', '--iptables-backend', b);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^would remove IPVS TCP 10\.96\.0\.10:80$/m);
    expect(r.stdout).toMatch(/^would leave IPVS TCP 192\.168\.1\.10:443: in no kube-proxy ipset$/m);
    expect(r.stdout).toMatch(/^would leave IPVS FWM 7: a fwmark service/m);
    expect(r.stdout).toMatch(/^would remove IPVS TCP 192\.0\.2\.1:30443$/m);
    expect(r.stdout).toMatch(
      /^would leave IPVS TCP 198\.51\.100\.100:30443: a KUBE-NODE-PORT set holds port 30443, but 198\.51\.100\.100 is not one of this node's NodePort addresses$/m,
    );
    expect(r.stdout).toMatch(/^would remove link kube-ipvs0$/m);
    expect(r.stdout).toMatch(/^would remove ipset KUBE-CLUSTER-IP$/m);
    expect(snapshot(b)).toBe(before);
  });

  it('removes kube-proxy leftovers in kernel order and keeps foreign objects', () => {
    const r = cli('cleanup', '--iptables-backend', b);
    expect({ status: r.status, stderr: r.status === 0 ? '' : r.stderr }).toEqual({ status: 0, stderr: '' });
    // text lines by default, as kube-proxy's (klog: an error line starts with E)
    expect(r.stderr).not.toMatch(/"level":"error"|^E\d{4} /m);

    expect(run('ipvsadm', ['-Ln'])).not.toMatch(/TCP\s+10\.96\.0\.10:80/);
    expect(run('ipvsadm', ['-Ln'])).not.toMatch(/TCP\s+192\.0\.2\.1:30443/);
    foreignIpvsStays();
    expect(tryRun('ip', ['link', 'show', 'kube-ipvs0']).status).not.toBe(0);
    expect(ip('-d', '-o', 'link', 'show', FOREIGN.LINK)).toMatch(/ dummy /);

    for (const f of ['ipv4', 'ipv6'] as const) {
      const nat = run(bin(f, b, 'save'), ['-t', 'nat']);
      const filter = run(bin(f, b, 'save'), ['-t', 'filter']);
      const kubeChains = (nat + filter)
        .split('\n')
        .filter((l) => /^:KUBE-/.test(l))
        .map((l) => l.split(' ')[0]);
      expect(kubeChains.sort()).toEqual([`:${FOREIGN.KUBELET_FILTER_CHAIN}`, `:${FOREIGN.KUBELET_NAT_CHAIN}`]);
      expect(nat + filter).not.toMatch(/kubernetes|kube-proxy/);
      expect(nat).toMatch(new RegExp(`-A ${FOREIGN.NAT_CHAIN} -j RETURN`));
      expect(nat).toMatch(/-A POSTROUTING -s \S+ -j MASQUERADE/);
      expect(filter).toMatch(new RegExp(`-A INPUT -j ${FOREIGN.KUBELET_FILTER_CHAIN}`));
      expect(filter).toMatch(new RegExp(`-A INPUT -p tcp .*--dport 2222 -j ${FOREIGN.FILTER_CHAIN}`));
      expect(filter).toMatch(
        new RegExp(
          `-A ${FOREIGN.FILTER_CHAIN} -m set --match-set ${f === 'ipv4' ? FOREIGN.SET : FOREIGN.SET6} src -j ACCEPT`,
        ),
      );
    }
    const sets = run('ipset', ['list', '-n']).split('\n').filter(Boolean).sort();
    expect(sets).toEqual([FOREIGN.SET, FOREIGN.SET6].sort());
    for (const n of kubeSetNames()) expect(sets).not.toContain(n);
  });

  it('a second run succeeds and changes nothing', () => {
    const before = snapshot(b);
    const r = cli('cleanup', '--iptables-backend', b);
    expect(r.status).toBe(0);
    expect(snapshot(b)).toBe(before);
  });

  it("kube-proxy's --cleanup flag among other flags does the same", () => {
    seed(b);
    const r = cli('--cleanup', '--v=2', '--iptables-backend', b);
    expect(r.status).toBe(0);
    expect(tryRun('ip', ['link', 'show', 'kube-ipvs0']).status).not.toBe(0);
    expect(run('ipset', ['list', '-n'])).not.toMatch(/KUBE-/);
    expect(run('ipvsadm', ['-Ln'])).not.toMatch(/TCP\s+10\.96\.0\.10:80/);
    foreignIpvsStays();
  });
});
