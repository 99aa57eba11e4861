// conntrack.* and oomScoreAdj on the VM's real kernel.
// - `kube-ipvs --init-only --config=F` (the CLI, as kube-proxy's init container runs it) in
//   the VM's host network namespace, where nf_conntrack_max is writable as on a node with
//   hostNetwork: the values read back from /proc/sys and /sys/module afterwards; a second run
//   writes nothing.
// - this file's own network namespace (guest-jest.sh): the kernel makes nf_conntrack_max
//   read-only there (EACCES), the timeouts stay per-namespace and writable; the daemon's
//   applyNodeSettings reports the one failure and sets the rest.
// - oom_score_adj of a process, and of this process through the daemon's path.
// - the daemon as a process: oomScoreAdj and conntrack.* applied at start, and again on a
//   live reload of the config file (no API server needed: both come before the informers).
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants } from 'node:os';
import { defaultProxyConfig } from '../../lib/config/decode-config';
import { ProxyConfig } from '../../lib/config/proxy-config';
import { applyNodeSettings, realNodeSettingsTargets } from '../../lib/daemon/node-settings';
import { CONNTRACK_HASHSIZE, CONNTRACK_SYSCTL, onlineCpus } from '../../lib/kernel/sysctl/conntrack-sysctls';
import { applyOomScoreAdj } from '../../lib/kernel/sysctl/oom-score-adj';
import { ProcSysctl } from '../../lib/kernel/sysctl/sysctl';
import { KUBE_IPVS_BIN, startKubeIpvs } from '../../testkit/processes';
import { run, tryRun } from '../../testkit/netns';

const E = constants.errno;
const HOST_NET = '--net=/proc/1/ns/net';
const proc = (key: string): string => `/proc/sys/${key}`;
/** a file read in the VM's host network namespace */
const hostRead = (path: string): string => run('nsenter', [HOST_NET, 'cat', path]).trim();
const hostWrite = (path: string, value: string): void => {
  run('nsenter', [HOST_NET, 'sh', '-c', `echo ${value} > ${path}`]);
};
const TIMEOUTS = [
  CONNTRACK_SYSCTL.TCP_TIMEOUT_ESTABLISHED,
  CONNTRACK_SYSCTL.TCP_TIMEOUT_CLOSE_WAIT,
  CONNTRACK_SYSCTL.TCP_BE_LIBERAL,
  CONNTRACK_SYSCTL.UDP_TIMEOUT,
  CONNTRACK_SYSCTL.UDP_TIMEOUT_STREAM,
];

beforeAll(() => {
  run('modprobe', ['nf_conntrack']);
});

describe('kube-ipvs --init-only in the host network namespace', () => {
  const saved = new Map<string, string>();
  beforeAll(() => {
    for (const k of [CONNTRACK_SYSCTL.MAX, ...TIMEOUTS]) saved.set(k, hostRead(proc(k)));
  });
  afterAll(() => {
    // the timeouts and the limit back as they were (hashsize stays: raising it is harmless)
    for (const [k, v] of saved) hostWrite(proc(k), v);
  });

  it('raises nf_conntrack_max to conntrack.min and hashsize to max/4, sets every timeout; a second run writes nothing', async () => {
    const before = Number(saved.get(CONNTRACK_SYSCTL.MAX));
    const hashBefore = Number(hostRead(`/sys/module/${CONNTRACK_HASHSIZE}`));
    const cpus = await onlineCpus();
    // min above both the current limit and maxPerCore x CPUs: kube-proxy takes the min
    const min = Math.max(before, hashBefore * 4) + 65_536;
    const dir = mkdtempSync(join(tmpdir(), 'init-only-'));
    const file = join(dir, 'config.conf');
    writeFileSync(
      file,
      [
        'apiVersion: kubeproxy.config.k8s.io/v1alpha1',
        'kind: KubeProxyConfiguration',
        'mode: ipvs',
        'conntrack:',
        '  maxPerCore: 1',
        `  min: ${min}`,
        '  tcpEstablishedTimeout: 2h',
        '  tcpCloseWaitTimeout: 30m',
        '  tcpBeLiberal: true',
        '  udpTimeout: 45s',
        '  udpStreamTimeout: 2m30s',
        '',
      ].join('\n'),
    );
    expect(cpus).toBeLessThan(min);
    const args = [
      HOST_NET,
      process.execPath,
      KUBE_IPVS_BIN,
      `--config=${file}`,
      '--init-only',
      '--logging-format=json',
    ];
    const first = tryRun('nsenter', args, undefined, 180_000);
    expect({
      status: first.status,
      stderr: first.stderr.split('\n').filter((l) => l.includes('"level":"error"') || l.startsWith('kube-ipvs:')),
    }).toEqual({ status: 0, stderr: [] });
    expect(Number(hostRead(proc(CONNTRACK_SYSCTL.MAX)))).toBe(min);
    expect(Number(hostRead(`/sys/module/${CONNTRACK_HASHSIZE}`))).toBe(Math.trunc(min / 4));
    expect(TIMEOUTS.map((k) => hostRead(proc(k)))).toEqual(['7200', '1800', '1', '45', '150']);

    const second = tryRun('nsenter', args, undefined, 180_000);
    expect(second.status).toBe(0);
    expect(second.stderr).toContain('"msg":"init done: 0 conntrack setting(s) changed"');
  }, 400_000);
});

describe("the daemon's node settings in this file's own network namespace", () => {
  const self = new ProcSysctl('/proc');
  afterAll(async () => {
    await self.write('self/oom_score_adj', '0');
  });

  it('nf_conntrack_max is read-only here (EACCES): that one is reported, the timeouts and oom_score_adj are set', async () => {
    const max = Number(run('cat', [proc(CONNTRACK_SYSCTL.MAX)]).trim());
    const err = await new ProcSysctl().write(CONNTRACK_SYSCTL.MAX, String(max + 1)).catch((e: unknown) => e);
    expect(err).toEqual(expect.objectContaining({ key: CONNTRACK_SYSCTL.MAX, errno: E.EACCES }));

    const config: ProxyConfig = {
      ...defaultProxyConfig(),
      oomScoreAdj: -998,
      conntrack: {
        ...defaultProxyConfig().conntrack,
        maxPerCore: 1,
        min: max + 1,
        tcpEstablishedTimeoutSec: 3600,
        udpTimeoutSec: 40,
      },
    };
    const lines: { level: string; msg: string; meta?: Record<string, unknown> }[] = [];
    const log = {
      info: (msg: string, meta?: Record<string, unknown>) =>
        lines.push({ level: 'info', msg, ...(meta ? { meta } : {}) }),
      warn: (msg: string, meta?: Record<string, unknown>) =>
        lines.push({ level: 'warn', msg, ...(meta ? { meta } : {}) }),
      error: (msg: string, meta?: Record<string, unknown>) =>
        lines.push({ level: 'error', msg, ...(meta ? { meta } : {}) }),
    };
    expect(await applyNodeSettings(config, log, realNodeSettingsTargets())).toBe(false);
    const errors = lines.filter((l) => l.level === 'error').map((l) => l.meta);
    expect(errors[0]).toEqual({ sysctl: CONNTRACK_SYSCTL.MAX, errno: 'EACCES' });
    // hashsize too is the host's alone: raising it from here would be EOPNOTSUPP
    expect(errors.slice(1)).toEqual(errors.slice(1).map(() => ({ sysctl: CONNTRACK_HASHSIZE, errno: 'EOPNOTSUPP' })));
    expect(run('cat', [proc(CONNTRACK_SYSCTL.TCP_TIMEOUT_ESTABLISHED)]).trim()).toBe('3600');
    expect(run('cat', [proc(CONNTRACK_SYSCTL.UDP_TIMEOUT)]).trim()).toBe('40');
    expect(await self.read('self/oom_score_adj')).toBe('-998');
  });
});

describe('oom_score_adj of another process', () => {
  it("kube-proxy's -999, then a raise, read back from /proc/<pid>/oom_score_adj; out of range is EINVAL", async () => {
    const child = spawn('sleep', ['120'], { stdio: 'ignore' });
    try {
      const p = new ProcSysctl('/proc');
      expect(await applyOomScoreAdj(p, -999, child.pid!)).toBe(true);
      expect(run('cat', [`/proc/${child.pid}/oom_score_adj`]).trim()).toBe('-999');
      expect(await applyOomScoreAdj(p, -999, child.pid!)).toBe(false);
      expect(await applyOomScoreAdj(p, 500, child.pid!)).toBe(true);
      expect(run('cat', [`/proc/${child.pid}/oom_score_adj`]).trim()).toBe('500');
      await expect(applyOomScoreAdj(p, 1001, child.pid!)).rejects.toEqual(expect.objectContaining({ errno: E.EINVAL }));
    } finally {
      child.kill();
    }
  });
});

async function untilAnswers(url: string, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const ok = await fetch(url).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > end) throw new Error(`${url} did not answer within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe('the daemon process', () => {
  it('applies oomScoreAdj and conntrack.* at start, and a changed file again, live', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'node-settings-'));
    // an API server nobody answers on: the node settings come before the informers
    writeFileSync(
      join(dir, 'kubeconfig'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'none', cluster: { server: 'http://127.0.0.1:9', 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'none', user: {} }],
        contexts: [{ name: 'none', context: { cluster: 'none', user: 'none' } }],
        'current-context': 'none',
      }),
    );
    const file = join(dir, 'config.conf');
    const config = (oom: number, udp: string): string =>
      [
        'apiVersion: kubeproxy.config.k8s.io/v1alpha1',
        'kind: KubeProxyConfiguration',
        'mode: ipvs',
        'clientConnection:',
        `  kubeconfig: ${join(dir, 'kubeconfig')}`,
        'hostnameOverride: node-settings',
        'healthzBindAddress: 127.0.0.1:10256',
        'metricsBindAddress: 127.0.0.1:10249',
        'conntrack:',
        '  maxPerCore: 0',
        '  tcpCloseWaitTimeout: 20m',
        `  udpTimeout: ${udp}`,
        `oomScoreAdj: ${oom}`,
        '',
      ].join('\n');
    writeFileSync(file, config(-500, '35s'));
    const daemon = startKubeIpvs([`--config=${file}`]);
    try {
      await daemon.waitFor((l) => l.message === 'oom_score_adj set to -500', 'oom_score_adj at start', 0, 400_000);
      expect(run('cat', [`/proc/${daemon.child.pid}/oom_score_adj`]).trim()).toBe('-500');
      expect(run('cat', [proc(CONNTRACK_SYSCTL.TCP_TIMEOUT_CLOSE_WAIT)]).trim()).toBe('1200');
      expect(run('cat', [proc(CONNTRACK_SYSCTL.UDP_TIMEOUT)]).trim()).toBe('35');
      // the file watch starts once the servers listen: change the file only then
      await untilAnswers('http://127.0.0.1:10249/proxyMode', 300_000);
      const from = daemon.lines.length;
      writeFileSync(file, config(300, '36s'));
      await daemon.waitFor(
        (l) => l.message === 'oom_score_adj set to 300',
        'oom_score_adj after the reload',
        from,
        120_000,
      );
      await daemon.waitFor(
        (l) => String(l.message).startsWith(`sysctl ${CONNTRACK_SYSCTL.UDP_TIMEOUT}: 35 -> 36`),
        'the udp timeout after the reload',
        from,
        60_000,
      );
      expect(run('cat', [`/proc/${daemon.child.pid}/oom_score_adj`]).trim()).toBe('300');
      expect(run('cat', [proc(CONNTRACK_SYSCTL.UDP_TIMEOUT)]).trim()).toBe('36');
      expect(daemon.child.exitCode).toBe(null); // applied live, no restart
    } finally {
      await daemon.kill();
    }
  }, 700_000);
});
