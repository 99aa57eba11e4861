// A kubeconfig that cannot be used stops `kube-ipvs --config` before anything touches the
// kernel (issue 25 item 9): exit 1, one line on stderr naming the file, no stack trace and
// nothing of the file's text; the conntrack sysctls, oom_score_adj, kube-ipvs0 and the IPVS
// table are as they were.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONNTRACK_SYSCTL } from '../../lib/kernel/sysctl/conntrack-sysctls';
import { KUBE_IPVS_NODE_FLAGS } from '../../lib/cli/node-flags';
import { KUBE_IPVS_BIN } from '../../testkit/processes';
import { run, tryRun } from '../../testkit/netns';

const SECRET = 'c2VjcmV0LWNsaWVudC1rZXk';
const udp = () => run('cat', [`/proc/sys/${CONNTRACK_SYSCTL.UDP_TIMEOUT}`]).trim();

beforeAll(() => {
  run('modprobe', ['nf_conntrack']);
  run('modprobe', ['ip_vs']);
});

describe.each([
  [
    'a tokenFile that is not there',
    (dir: string) =>
      `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:9\nusers:\n- name: u\n  user:\n    tokenFile: ${dir}/missing-token\n    client-key-data: ${SECRET}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n`,
  ],
  ['bad YAML', () => `apiVersion: v1\nusers:\n- name: u\n  user:\n    client-key-data: ${SECRET}\n\tbroken: [\n`],
])('kube-ipvs --config with %s in clientConnection.kubeconfig', (_what, kubeconfig) => {
  it('exits 1 with one line, before the sysctls, oom_score_adj, kube-ipvs0 or IPVS are touched', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-refused-'));
    writeFileSync(join(dir, 'kubeconfig'), kubeconfig(dir));
    const before = udp();
    const want = before === '41' ? '42' : '41';
    writeFileSync(
      join(dir, 'config.conf'),
      [
        'apiVersion: kubeproxy.config.k8s.io/v1alpha1',
        'kind: KubeProxyConfiguration',
        'mode: ipvs',
        'clientConnection:',
        `  kubeconfig: ${join(dir, 'kubeconfig')}`,
        'conntrack:',
        `  udpTimeout: ${want}s`,
        'oomScoreAdj: -500',
        '',
      ].join('\n'),
    );
    const r = tryRun(
      process.execPath,
      [...KUBE_IPVS_NODE_FLAGS, KUBE_IPVS_BIN, `--config=${join(dir, 'config.conf')}`],
      undefined,
      300_000,
    );
    expect(r.status).toBe(1);
    const lines = r.stderr.split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^kube-ipvs: kubeconfig ${join(dir, 'kubeconfig')}: `));
    expect(r.stderr + r.stdout).not.toContain(SECRET);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(udp()).toBe(before);
    expect(tryRun('ip', ['link', 'show', 'kube-ipvs0']).status).not.toBe(0);
    expect(
      run('ipvsadm', ['-Ln'])
        .split('\n')
        .filter((l) => /^(TCP|UDP|SCTP|FWM)/.test(l)),
    ).toEqual([]);
  }, 400_000);
});
