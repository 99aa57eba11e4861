import { defaultProxyConfig } from '../../lib/config/decode-config';
import { ProxyConfig } from '../../lib/config/proxy-config';
import { applyNodeSettings, NodeSettingsTargets } from '../../lib/daemon/node-settings';
import { CONNTRACK_HASHSIZE, CONNTRACK_SYSCTL as K } from '../../lib/kernel/sysctl/conntrack-sysctls';
import { FakeSysctl } from '../../testkit/kernel/fake-sysctl';

function targets(sysctlValues: Record<string, string> = {}) {
  const t = {
    sysctl: new FakeSysctl({
      [K.MAX]: '65536',
      [K.TCP_TIMEOUT_ESTABLISHED]: '432000',
      [K.TCP_TIMEOUT_CLOSE_WAIT]: '60',
      [K.TCP_BE_LIBERAL]: '0',
      [K.UDP_TIMEOUT]: '30',
      [K.UDP_TIMEOUT_STREAM]: '120',
      ...sysctlValues,
    }),
    modules: new FakeSysctl({ [CONNTRACK_HASHSIZE]: '16384' }),
    proc: new FakeSysctl({ 'self/oom_score_adj': '0' }),
    numCPU: async () => 2,
  } satisfies NodeSettingsTargets;
  return t;
}

function recorder() {
  const lines: { level: string; msg: string; meta?: Record<string, unknown> }[] = [];
  const push = (level: string) => (msg: string, meta?: Record<string, unknown>) =>
    lines.push({ level, msg, ...(meta ? { meta } : {}) });
  return { lines, log: { info: push('info'), warn: push('warn'), error: push('error') } };
}

describe('applyNodeSettings', () => {
  it("at start: kube-proxy's defaults, oom_score_adj -999 and the conntrack sysctls", async () => {
    const t = targets();
    const { log } = recorder();
    expect(await applyNodeSettings(defaultProxyConfig(), log, t)).toBe(true);
    expect(t.proc.writes).toEqual([{ key: 'self/oom_score_adj', value: '-999' }]);
    expect(t.sysctl.writes.map((w) => `${w.key}=${w.value}`)).toEqual([
      `${K.MAX}=131072`,
      `${K.TCP_TIMEOUT_ESTABLISHED}=86400`,
      `${K.TCP_TIMEOUT_CLOSE_WAIT}=3600`,
    ]);
    expect(t.modules.writes).toEqual([{ key: CONNTRACK_HASHSIZE, value: '32768' }]);
  });

  it('on a reload, only what changed is applied again', async () => {
    const t = targets();
    const { log } = recorder();
    const old = defaultProxyConfig();
    await applyNodeSettings(old, log, t);
    const writes = () => t.sysctl.writes.length + t.proc.writes.length + t.modules.writes.length;
    const before = writes();
    expect(await applyNodeSettings({ ...old, ipvs: { ...old.ipvs, scheduler: 'lc' } }, log, t, old)).toBe(true);
    expect(writes()).toBe(before);
    const next: ProxyConfig = { ...old, oomScoreAdj: 100, conntrack: { ...old.conntrack, udpTimeoutSec: 45 } };
    await applyNodeSettings(next, log, t, old);
    expect(t.proc.writes.at(-1)).toEqual({ key: 'self/oom_score_adj', value: '100' });
    expect(t.sysctl.writes.at(-1)).toEqual({ key: K.UDP_TIMEOUT, value: '45' });
    expect(writes()).toBe(before + 2);
  });

  it('every failure is one error line naming the sysctl; the rest is applied and it never throws', async () => {
    const t = { ...targets(), proc: new FakeSysctl(), modules: new FakeSysctl() };
    const { lines, log } = recorder();
    expect(await applyNodeSettings(defaultProxyConfig(), log, t)).toBe(false);
    const errors = lines.filter((l) => l.level === 'error');
    expect(errors.map((l) => l.msg)).toEqual([
      expect.stringMatching(/^oomScoreAdj -999 not applied: .*self\/oom_score_adj.*ENOENT/),
      expect.stringMatching(
        /^conntrack setting not applied, proxying with the kernel's: .*hashsize.*ENOENT.*maxPerCore: 0/,
      ),
    ]);
    expect(errors[1]!.meta).toEqual({ sysctl: CONNTRACK_HASHSIZE, errno: 'ENOENT' });
    expect(t.sysctl.writes.map((w) => w.key)).toEqual([K.MAX, K.TCP_TIMEOUT_ESTABLISHED, K.TCP_TIMEOUT_CLOSE_WAIT]);
  });
});
