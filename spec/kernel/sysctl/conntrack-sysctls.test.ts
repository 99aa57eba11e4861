import {
  CONNTRACK_HASHSIZE,
  CONNTRACK_MAX_LIMIT,
  CONNTRACK_SYSCTL as K,
  ConntrackSettings,
  conntrackMax,
  ensureConntrackSysctls,
  parseCpuList,
} from '../../../lib/kernel/sysctl/conntrack-sysctls';
import { applyOomScoreAdj, oomScoreAdjKey } from '../../../lib/kernel/sysctl/oom-score-adj';
import { FakeSysctl } from '../../../testkit/kernel/fake-sysctl';

/** kube-proxy's defaults (v1alpha1): 32768 per core, min 131072, 24h, 1h, the rest left alone */
const DEFAULTS: ConntrackSettings = {
  maxPerCore: 32768,
  min: 131072,
  tcpEstablishedTimeoutSec: 86400,
  tcpCloseWaitTimeoutSec: 3600,
  tcpBeLiberal: false,
  udpTimeoutSec: 0,
  udpStreamTimeoutSec: 0,
};

/** a 6.1 kernel's values on a small node */
const kernel = (over: Record<string, string> = {}) =>
  new FakeSysctl({
    [K.MAX]: '65536',
    [K.TCP_TIMEOUT_ESTABLISHED]: '432000',
    [K.TCP_TIMEOUT_CLOSE_WAIT]: '60',
    [K.TCP_BE_LIBERAL]: '0',
    [K.UDP_TIMEOUT]: '30',
    [K.UDP_TIMEOUT_STREAM]: '120',
    ...over,
  });
const modules = (hashsize = '16384') => new FakeSysctl({ [CONNTRACK_HASHSIZE]: hashsize });

describe('conntrackMax (kube-proxy getConntrackMax)', () => {
  it.each<[string, Pick<ConntrackSettings, 'maxPerCore' | 'min'>, number, number]>([
    ['maxPerCore 0 leaves the limit (min ignored)', { maxPerCore: 0, min: 131072 }, 8, 0],
    ['min wins over a smaller scaled value', { maxPerCore: 32768, min: 131072 }, 2, 131072],
    ['scaled wins over a smaller min', { maxPerCore: 32768, min: 131072 }, 8, 262144],
    ['equal: min', { maxPerCore: 32768, min: 131072 }, 4, 131072],
    ['scaled is capped at 1,048,576', { maxPerCore: 32768, min: 0 }, 64, CONNTRACK_MAX_LIMIT],
  ])('%s', (_name, s, cpus, want) => {
    expect(conntrackMax(s, cpus)).toBe(want);
  });
});

describe('parseCpuList', () => {
  it.each<[string, number]>([
    ['0\n', 1],
    ['0-3\n', 4],
    ['0-3,6,8-9', 7],
    ['', 0],
    ['3-1', 0],
    ['x', 0],
  ])('%j -> %d', (text, n) => expect(parseCpuList(text)).toBe(n));
});

describe('ensureConntrackSysctls', () => {
  it("kube-proxy's defaults on 2 CPUs: max to min, hashsize to max/4, the two TCP timeouts; in that order", async () => {
    const sysctl = kernel();
    const mods = modules();
    const r = await ensureConntrackSysctls({ sysctl, modules: mods, numCPU: 2 }, DEFAULTS);
    expect(r).toEqual({
      changed: [K.MAX, CONNTRACK_HASHSIZE, K.TCP_TIMEOUT_ESTABLISHED, K.TCP_TIMEOUT_CLOSE_WAIT],
      failed: [],
    });
    expect(sysctl.writes).toEqual([
      { key: K.MAX, value: '131072' },
      { key: K.TCP_TIMEOUT_ESTABLISHED, value: '86400' },
      { key: K.TCP_TIMEOUT_CLOSE_WAIT, value: '3600' },
    ]);
    expect(mods.writes).toEqual([{ key: CONNTRACK_HASHSIZE, value: '32768' }]);
    // a second run (the main container after an --init-only init container) writes nothing
    expect(await ensureConntrackSysctls({ sysctl, modules: mods, numCPU: 2 }, DEFAULTS)).toEqual({
      changed: [],
      failed: [],
    });
    expect(sysctl.writes).toHaveLength(3);
  });

  it('never lowers nf_conntrack_max or hashsize', async () => {
    const sysctl = kernel({ [K.MAX]: '1000000' });
    const mods = modules('500000');
    await ensureConntrackSysctls({ sysctl, modules: mods, numCPU: 2 }, DEFAULTS);
    expect(sysctl.writes.map((w) => w.key)).not.toContain(K.MAX);
    expect(mods.writes).toEqual([]);
  });

  it('a larger limit already set still gets its hashsize raised to limit/4 of what kube-proxy asks', async () => {
    const mods = modules('1024');
    await ensureConntrackSysctls({ sysctl: kernel({ [K.MAX]: '262144' }), modules: mods, numCPU: 2 }, DEFAULTS);
    expect(mods.writes).toEqual([{ key: CONNTRACK_HASHSIZE, value: '32768' }]);
  });

  it('zero timeouts, tcpBeLiberal false and maxPerCore 0 touch nothing; non-zero ones are set', async () => {
    const sysctl = kernel();
    const mods = modules();
    const none = { ...DEFAULTS, maxPerCore: 0, tcpEstablishedTimeoutSec: 0, tcpCloseWaitTimeoutSec: 0 };
    expect(await ensureConntrackSysctls({ sysctl, modules: mods, numCPU: 2 }, none)).toEqual({
      changed: [],
      failed: [],
    });
    expect(sysctl.writes).toEqual([]);
    const all = { ...none, tcpBeLiberal: true, udpTimeoutSec: 45, udpStreamTimeoutSec: 150 };
    await ensureConntrackSysctls({ sysctl, modules: mods, numCPU: 2 }, all);
    expect(sysctl.writes).toEqual([
      { key: K.TCP_BE_LIBERAL, value: '1' },
      { key: K.UDP_TIMEOUT, value: '45' },
      { key: K.UDP_TIMEOUT_STREAM, value: '150' },
    ]);
  });

  it('a failing write is returned and the others still applied (nf_conntrack not loaded: every key ENOENT)', async () => {
    const sysctl = kernel();
    // the module parameter missing: ENOENT for hashsize only
    const r = await ensureConntrackSysctls({ sysctl, modules: new FakeSysctl(), numCPU: 2 }, DEFAULTS);
    expect(r.failed.map((e) => [e.key, e.errnoName])).toEqual([[CONNTRACK_HASHSIZE, 'ENOENT']]);
    expect(r.changed).toEqual([K.MAX, K.TCP_TIMEOUT_ESTABLISHED, K.TCP_TIMEOUT_CLOSE_WAIT]);
    const unloaded = await ensureConntrackSysctls(
      { sysctl: new FakeSysctl(), modules: new FakeSysctl(), numCPU: 2 },
      DEFAULTS,
    );
    expect(unloaded.failed.map((e) => e.key)).toEqual([
      K.MAX,
      CONNTRACK_HASHSIZE,
      K.TCP_TIMEOUT_ESTABLISHED,
      K.TCP_TIMEOUT_CLOSE_WAIT,
    ]);
  });
});

describe('applyOomScoreAdj', () => {
  it('writes /proc/<pid>/oom_score_adj when it differs', async () => {
    const proc = new FakeSysctl({ [oomScoreAdjKey()]: '0', [oomScoreAdjKey(42)]: '0' });
    expect(await applyOomScoreAdj(proc, -999)).toBe(true);
    expect(await applyOomScoreAdj(proc, -999)).toBe(false);
    expect(await applyOomScoreAdj(proc, 10, 42)).toBe(true);
    expect(proc.writes).toEqual([
      { key: 'self/oom_score_adj', value: '-999' },
      { key: '42/oom_score_adj', value: '10' },
    ]);
  });
});
