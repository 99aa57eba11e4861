// `kube-ipvs cleanup` against the real `kube-proxy --cleanup` (.k8s/bin, the pinned release), after
// the real kube-proxy ran in each of its Linux modes: kube-proxy programs the node from the
// lab's real kube-apiserver and stops (SIGTERM, no cleanup, as a DaemonSet rollout stops it);
// `kube-proxy --cleanup` cleans the node; what kube-proxy left is put back with the kernel's own
// tools from their save text (restoreNode: the same node, checked line by line, without a second
// kube-proxy start and the minute its "done writing" reads take in the TCG guest); `kube-ipvs
// cleanup` cleans it. Both must leave the same node: the same IPVS table, ipsets, iptables nat,
// filter and mangle, nftables tables and kube-ipvs0 addresses (testkit/node-snapshot.ts,
// normalised), and nothing of kube-proxy's but what kube-proxy's own cleanup leaves (the
// sysctls it set).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ChildProcess } from 'node:child_process';
import {
  e2eProxyConfig,
  KUBE_IPVS_BIN,
  KUBE_PROXY_BIN,
  LoggedProcess,
  SERVICE_ACCOUNT_DIR,
  startKubeProxy,
} from '../../testkit/processes';
import { run, tryRun } from '../../testkit/netns';
import { connectToLab, kubeProxyIdentity, labFromEnv } from '../../testkit/lab-client';
import { labService } from '../../testkit/lab-objects';
import { Difference, differences, snapshot, Snapshot } from '../../testkit/node-snapshot';
import {
  SwapAddresses,
  applySwapObjects,
  makeSwapNode,
  removeSwapNode,
  removeSwapObjects,
} from '../../testkit/swap-traffic';
import { eventually } from '../../testkit/wait-for';

// each cleanup is many iptables, ipset and nft processes: on a loaded host the guest took over
// the default 60 s for kube-proxy's (killed: it left its nftables tables) and the test over 300 s
const CLEANUP_TIMEOUT_MS = 300_000;

const RUN = randomBytes(3).toString('hex');
const FILE_LABEL = { 'e2e.kube-ipvs.io/file': 'kube-proxy-cleanup' };

/** snapshot() with the two surfaces only a cleanup of every mode touches: mangle, and the nftables tables */
function nodeState(): Snapshot {
  const lines = (text: string) =>
    text
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('#'))
      .map((l) => l.replace(/ \[\d+:\d+\]$/, ''))
      .sort();
  return {
    ...snapshot(''),
    'iptables mangle': lines(run('iptables-save', ['-t', 'mangle'])),
    'ip6tables mangle': lines(run('ip6tables-save', ['-t', 'mangle'])),
    'nftables tables': lines(run('nft', ['list', 'tables'])),
  };
}

/** What kube-proxy left, as the kernel's tools save it: what restoreNode puts back. */
interface SavedNode {
  ipset: string;
  iptables: string;
  ip6tables: string;
  /** `nft list table` of each kube-proxy table (nftables mode's) */
  nft: { table: string; text: string }[];
  ipvs: string;
  /** kube-ipvs0's addresses (IPVS mode's), as CIDRs */
  addrs: string[];
}

function saveNode(): SavedNode {
  const tables = run('nft', ['list', 'tables'])
    .split('\n')
    .filter((l) => / kube-proxy$/.test(l))
    .map((l) => l.replace(/^table /, ''));
  const addrs = tryRun('ip', ['-o', 'addr', 'show', 'dev', 'kube-ipvs0']).stdout;
  return {
    ipset: run('ipset', ['save']),
    iptables: run('iptables-save', []),
    ip6tables: run('ip6tables-save', []),
    nft: tables.map((table) => ({ table, text: run('nft', ['list', 'table', ...table.split(' ')]) })),
    ipvs: run('ipvsadm', ['-Sn']),
    addrs: addrs
      .split('\n')
      .map((l) => l.split(/\s+/)[3] ?? '')
      .filter(Boolean),
  };
}

/**
 * Puts back what saveNode read: the sets the cleanup destroyed (kube-proxy's cleanup keeps its
 * IPv6 ones, which get their members back), both families' iptables tables, kube-proxy's nftables
 * tables, the IPVS table and kube-ipvs0's addresses; in that order, so a rule's set exists first.
 */
function restoreNode(saved: SavedNode): void {
  const existing = new Set(run('ipset', ['list', '-n']).split('\n').filter(Boolean));
  const sets = saved.ipset
    .split('\n')
    .filter((l) => l !== '' && !(l.startsWith('create ') && existing.has(l.split(' ')[1]!)));
  run('ipset', ['restore', '-exist'], sets.join('\n') + '\n');
  run('iptables-restore', [], saved.iptables);
  run('ip6tables-restore', [], saved.ip6tables);
  for (const { table, text } of saved.nft) {
    tryRun('nft', ['delete', 'table', ...table.split(' ')]);
    run('nft', ['-f', '-'], text);
  }
  run('ipvsadm', ['-C']);
  run('ipvsadm', ['-R'], saved.ipvs);
  if (saved.addrs.length > 0) {
    tryRun('ip', ['link', 'add', 'kube-ipvs0', 'type', 'dummy']);
    for (const a of saved.addrs) run('ip', ['addr', 'replace', a, 'dev', 'kube-ipvs0']);
  }
}

describe.each<[string, string]>([
  ['iptables', ''],
  ['nftables', 'nftables'],
  ['ipvs', 'ipvs'],
])(
  'after the real kube-proxy in %s mode, kube-ipvs cleanup leaves the node as kube-proxy --cleanup does',
  (modeName, mode) => {
    const lab = labFromEnv();
    const ns = `cleanup-${modeName}-${RUN}`;
    const nodeName = `cleanup-${modeName}-node-${RUN}`;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `kube-ipvs-cleanup-${modeName}-`));
    const cfg = path.join(dir, 'config.conf');
    const children: ChildProcess[] = [];
    let kubeProxy: LoggedProcess | undefined;
    let addrs: SwapAddresses;

    /**
     * kube-proxy programs the node, then stops without cleaning (SIGTERM), once what it wrote is
     * the same three reads in a row, 3 s apart: both families' syncs are over (stopped in the
     * middle of one, it leaves virtual servers that none of its sets names yet, which kube-ipvs's
     * cleanup rightly keeps, and one family's rules but not the other's)
     */
    async function kubeProxyRunsAndStops(): Promise<void> {
      kubeProxy = startKubeProxy([`--config=${cfg}`, '--v=1']);
      const programmed =
        mode === 'nftables'
          ? () => tryRun('nft', ['list', 'table', 'ip', 'kube-proxy']).stdout
          : mode === 'ipvs'
            ? () => run('ipvsadm', ['-Sn'])
            : () => run('iptables-save', ['-t', 'nat']);
      // and its IPv6 proxier has written its base chains (the Services are IPv4 only): the three
      // equal reads below then come after both families' first syncs
      const programmed6 =
        mode === 'nftables'
          ? () => tryRun('nft', ['list', 'table', 'ip6', 'kube-proxy']).stdout
          : () => run('ip6tables-save', ['-t', 'nat']);
      await eventually(
        `kube-proxy (${modeName} mode) programs the Services`,
        () => ({ v4: programmed(), v6: programmed6() }),
        ({ v4, v6 }) => v4.includes(addrs.web) && v4.includes(addrs.dns) && /KUBE-SERVICES|services/.test(v6),
        240_000,
      );
      const reads: string[] = [];
      await eventually(
        `kube-proxy (${modeName} mode) done writing`,
        async () => {
          await new Promise((r) => setTimeout(r, 3000));
          reads.push(JSON.stringify(nodeState()));
          return reads.slice(-3);
        },
        (last) => last.length === 3 && last.every((x) => x === last[0]),
        240_000,
      );
      await kubeProxy.kill('SIGTERM');
      kubeProxy = undefined;
    }

    beforeAll(async () => {
      connectToLab();
      children.push(...(await makeSwapNode()));
      addrs = await applySwapObjects(lab, ns, nodeName, FILE_LABEL, [
        labService(ns, 'empty', {}, { labels: FILE_LABEL }),
      ]);
      await kubeProxyIdentity(lab, dir, { duration: '1h' });
      fs.writeFileSync(
        cfg,
        e2eProxyConfig({ dir, node: nodeName, ipvs: ['syncPeriod: 30s'], forKubeProxy: true, mode }),
      );
    });

    afterAll(async () => {
      await kubeProxy?.kill('SIGTERM');
      removeSwapNode(children);
      tryRun(process.execPath, [KUBE_IPVS_BIN, 'cleanup']);
      await removeSwapObjects(lab, ns, nodeName, FILE_LABEL);
      fs.rmSync(dir, { recursive: true, force: true });
      fs.rmSync(SERVICE_ACCOUNT_DIR, { recursive: true, force: true });
    });

    it('the same node after either cleanup, and nothing of kube-proxy left but its sysctls', async () => {
      const before = nodeState();
      await kubeProxyRunsAndStops();
      const left = nodeState();
      const saved = saveNode();
      // it left its rules (else the comparison below proves nothing)
      expect(differences(before, left).length).toBeGreaterThan(0);

      const kp = tryRun(KUBE_PROXY_BIN, ['--cleanup', `--config=${cfg}`], undefined, CLEANUP_TIMEOUT_MS);
      const kpErrors = kp.stderr.split('\n').filter((l) => /^E\d{4}|error/i.test(l));
      console.log(`kube-proxy --cleanup after ${modeName} mode: exit ${kp.status}\n${kpErrors.join('\n')}`);
      const byKubeProxy = nodeState();

      restoreNode(saved);
      // the node kube-proxy left, line for line, for kube-ipvs's cleanup to start from
      expect(differences(left, nodeState())).toEqual([]);
      const r = tryRun(process.execPath, [KUBE_IPVS_BIN, 'cleanup'], undefined, CLEANUP_TIMEOUT_MS);
      expect({ status: r.status, stderr: r.status === 0 ? '' : r.stderr }).toEqual({ status: 0, stderr: '' });
      const byKubeIpvs = nodeState();

      // kube-proxy --cleanup v1.37 destroys its IPv4 sets only (pkg/proxy/ipvs/cleanup.go walks
      // ipsetInfo's names; the IPv6 sets are KUBE-6-*): kube-ipvs removes both families'
      // (docs/kube-proxy-parity.md)
      const kubeProxyKeepsItsIpv6Sets = (d: Difference) =>
        d.surface === 'ipset' && d.side === 'kube-proxy' && /^create KUBE-6-/.test(d.line);
      expect(differences(byKubeProxy, byKubeIpvs).filter((d) => !kubeProxyKeepsItsIpv6Sets(d))).toEqual([]);
      // what kube-proxy's own cleanup leaves of its run, and nothing else: the sysctls it set;
      // iptables mode's KUBE-FIREWALL (its guard for route_localnet, which no cleanup removes);
      // the empty tables iptables-nft made for its chains
      const kept = (d: { surface: string; line: string }) =>
        d.surface === 'sysctls' ||
        (modeName === 'iptables' && /KUBE-FIREWALL/.test(d.line)) ||
        (d.surface === 'nftables tables' && /^table ip6? (filter|nat|mangle)$/.test(d.line));
      expect(differences(before, byKubeIpvs).filter((d) => !kept(d))).toEqual([]);
    }, 900_000);
  },
);
