/**
 * The one way to build a Proxier for tests: over the kernel fakes (FakeIpvs, FakeLink,
 * FakeIpset, FakeIptables per family), the real trackers and planner, and a fake clock.
 * Every sync's result and every Event the proxier raises are collected.
 * This node: node-a, 192.0.2.1 on eth0 (addresses as in builders.ts).
 */
import winston from 'winston';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { FakeIpvs } from './kernel/fake-ipvs';
import { FakeLink } from './kernel/fake-link';
import { FakeIpset } from './kernel/fake-ipset';
import { FakeIptables, FakeNftGeneration } from './kernel/fake-iptables';
import { Conntrack } from '../lib/kernel/conntrack/conntrack';
import { NftTables } from '../lib/kernel/nftables/nftables';
import { IpFamily } from '../lib/model/ip-family';
import { planServicePort } from '../lib/plan/plan-service-port';
import { Proxier } from '../lib/proxier/proxier';
import { NodeState, Planner, ProxierSettings, SyncResult } from '../lib/proxier/types';
import { ServiceHealthSink } from '../lib/proxier/service-health';
import { FakeClock } from './fake-clock';
import { procIpVsText } from './proc-ip-vs-text';

export const FAKE_NODE = 'node-a';
export const FAKE_NODE_IP = '192.0.2.1';

export const FAKE_SETTINGS: ProxierSettings = {
  families: ['ipv4'],
  scheduler: 'rr',
  syncPeriodMs: 30_000,
  minSyncPeriodMs: 0,
  excludeCIDRs: [],
  excludeClusterCIDRs: [],
  nodePortAddresses: [],
  masqueradeAll: false,
  masqueradeBit: 14,
  clusterCIDRs: ['10.244.0.0/16'],
  detectLocalMode: 'ClusterCIDR',
  bridgeInterface: '',
  interfaceNamePrefix: '',
};

export interface ProxierOverFakesOptions {
  /** over FAKE_SETTINGS; `families` also decides the FakeIptables made (one per family) */
  readonly settings?: Partial<ProxierSettings>;
  /** over FAKE_NODE on FAKE_NODE_IP */
  readonly node?: Partial<NodeState>;
  /** the schedulers the IPVS fake knows (default: the kernel's) */
  readonly schedulers?: string[];
  /** fakes to build on (the kernel state a restarted daemon finds); a link given is used as is (no eth0 added) */
  readonly ipvs?: FakeIpvs;
  readonly link?: FakeLink;
  readonly ipset?: FakeIpset;
  /** the iptables fakes per family, when kept from another proxier (a restart); made for `families` otherwise */
  readonly iptables?: Partial<Record<IpFamily, FakeIptables>>;
  /** FakeIptables reads nft's ruleset generation (default: off) */
  readonly readGeneration?: boolean;
  /**
   * full syncs read the table as the daemon does, from /proc/net/ip_vs (the fake's table printed
   * as the kernel prints it) beside the netlink service dump: 'newest-first' lists each virtual
   * server's real servers as the kernel does, 'listed' in the fake's own order
   */
  readonly proc?: 'newest-first' | 'listed';
  readonly planner?: Planner;
  readonly serviceHealth?: ServiceHealthSink;
  readonly conntrack?: Conntrack;
  /** nf_tables, for kube-proxy's nftables-mode tables (default: none, left alone) */
  readonly nftables?: NftTables;
  /** the proxier's logger (default: silent) */
  readonly log?: winston.Logger;
  /** iptables supports MASQUERADE --random-fully, per family (default: neither, as the proxier's own default) */
  readonly randomFully?: Partial<Record<IpFamily, boolean>>;
  /** what each sync holds (the daemon: the informers' intake gate) */
  readonly intakeGate?: { hold(): void; release(): void };
}

export async function proxierOverFakes(opts: ProxierOverFakesOptions = {}) {
  const settings: ProxierSettings = { ...FAKE_SETTINGS, ...opts.settings };
  const clock = new FakeClock();
  const ipvs = opts.ipvs ?? new FakeIpvs(opts.schedulers ? { schedulers: opts.schedulers } : {});
  let link = opts.link;
  if (!link) {
    link = new FakeLink();
    await link.addDummy('eth0');
    await link.addAddress((await link.getLink('eth0')).index, FAKE_NODE_IP);
  }
  const quiet = winston.createLogger({ silent: true });
  const ipset = opts.ipset ?? new FakeIpset({ log: quiet });
  // one ipset fake serves every family, as one kernel does
  const ipsets: Partial<Record<IpFamily, FakeIpset>> = {};
  const iptablesByFamily: Partial<Record<IpFamily, FakeIptables>> = {};
  // one network namespace: one nf_tables generation, moved by every family's commits
  const netns = new FakeNftGeneration();
  for (const family of settings.families) {
    ipsets[family] = ipset;
    iptablesByFamily[family] =
      opts.iptables?.[family] ??
      new FakeIptables({
        family,
        ipsets: ipset,
        readGeneration: opts.readGeneration ?? false,
        netns,
      });
  }
  const node: NodeState = { name: FAKE_NODE, zone: '', nodeIPs: [FAKE_NODE_IP], podCIDRs: [], ...opts.node };
  const events: string[] = [];
  const results: SyncResult[] = [];
  /** per sync (as results), the EndpointSlice trigger times it took in */
  const triggers: number[][] = [];
  /** per informer event that changed something: "service N" / "endpoints N" */
  const changes: string[] = [];
  /** per syncEnded call: whether a sync was running then */
  const syncEnds: boolean[] = [];
  const readProcIpVs = opts.proc
    ? async () =>
        procIpVsText(
          (await ipvs.listAll()).map((e) =>
            opts.proc === 'newest-first' ? { ...e, dests: [...e.dests].reverse() } : e,
          ),
        )
    : undefined;
  const proxier = new Proxier(
    {
      ipvs,
      link,
      ipsets,
      iptables: iptablesByFamily,
      planner: opts.planner ?? { planServicePort },
      clock,
      // retries at their base wait, so a test settles them at known times
      random: () => 0,
      log: opts.log ?? quiet,
      events: { warn: (ref, reason, message) => events.push(`${ref.namespace}/${ref.name} ${reason}: ${message}`) },
      onSync: (r, _drift, triggered) => {
        results.push(r);
        triggers.push(triggered.map((t) => t.atMs));
      },
      onChanges: (kind, n) => changes.push(`${kind} ${n}`),
      // whether a sync was still running when its end was told
      syncEnded: () => syncEnds.push(proxier.syncing),
      ...(readProcIpVs ? { readProcIpVs } : {}),
      ...(opts.serviceHealth ? { serviceHealth: opts.serviceHealth } : {}),
      ...(opts.conntrack ? { conntrack: opts.conntrack } : {}),
      ...(opts.nftables ? { nftables: opts.nftables } : {}),
      ...(opts.randomFully ? { randomFully: opts.randomFully } : {}),
      ...(opts.intakeGate ? { intakeGate: opts.intakeGate } : {}),
    },
    settings,
    node,
  );
  /** let the proxier run what is due after `ms` */
  const settle = async (ms = 0) => {
    await clock.advance(ms);
    await proxier.idle();
  };
  // objects arrive as the informers hand them over: through the proxier's handlers
  const add = (...objs: (V1Service | V1EndpointSlice)[]) => {
    for (const o of objs)
      'spec' in o ? proxier.onServiceAdd(o as V1Service) : proxier.onEndpointSliceAdd(o as V1EndpointSlice);
  };
  const remove = (...objs: (V1Service | V1EndpointSlice)[]) => {
    for (const o of objs)
      'spec' in o ? proxier.onServiceDelete(o as V1Service) : proxier.onEndpointSliceDelete(o as V1EndpointSlice);
  };
  const replaceSlice = (old: V1EndpointSlice, next: V1EndpointSlice) => proxier.onEndpointSliceUpdate(old, next);
  /** both informers synced: the first sync runs */
  const start = async () => {
    proxier.onServicesSynced();
    proxier.onEndpointSlicesSynced();
    await settle();
  };
  const iptables = iptablesByFamily[settings.families[0]!]!;
  return {
    clock,
    ipvs,
    link,
    ipset,
    iptables,
    iptablesByFamily,
    /** the proxier's trackers (a test may change one behind the handlers, then call proxier.sync()) */
    services: proxier.services,
    slices: proxier.slices,
    proxier,
    events,
    results,
    triggers,
    changes,
    syncEnds,
    settle,
    add,
    remove,
    replaceSlice,
    start,
  };
}

/** Full syncs over `ipvs` fail (its table read throws, as over a closed socket) while `reads.broken` is true. */
export function breakIpvsReads(ipvs: FakeIpvs): { broken: boolean } {
  const reads = { broken: true };
  const listAll = ipvs.listAll.bind(ipvs);
  ipvs.listAll = async () => {
    if (reads.broken) throw new Error('netlink socket closed');
    return listAll();
  };
  return reads;
}
