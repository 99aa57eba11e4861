/**
 * A Proxier over the kernel twins (FakeIpvs, FakeLink, FakeIpset, FakeIptables), the real
 * trackers and planner, and a fake clock, for tests of what reads the proxier (the views).
 * This node: node-a, 192.0.2.1 on eth0 (addresses as in builders.ts).
 */
import winston from 'winston';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { FakeIpvs } from '../lib/kernel/ipvs/fake-ipvs';
import { FakeLink } from '../lib/kernel/link/fake-link';
import { FakeIpset } from '../lib/kernel/ipset/fake-ipset';
import { FakeIptables } from '../lib/kernel/iptables/fake-iptables';
import { ServiceTracker } from '../lib/tracker/service-tracker';
import { EndpointSliceTracker } from '../lib/tracker/endpoint-slice-tracker';
import { TrackerSource } from '../lib/tracker/tracker-source';
import { planServicePort } from '../lib/plan/plan-service-port';
import { Proxier, ProxierSettings } from '../lib/proxier/proxier';
import { FakeClock } from './fake-clock';
import { procIpVsText } from './proc-ip-vs-text';

export const TWIN_NODE = 'node-a';
export const TWIN_NODE_IP = '192.0.2.1';

export const TWIN_SETTINGS: ProxierSettings = {
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

/** `schedulers`: those the IPVS twin knows (default: the kernel's). */
/**
 * `opts.proc`: full syncs read the table as the daemon does, from /proc/net/ip_vs (the twin's
 * table printed as the kernel prints it, each virtual server's real servers newest first)
 * beside the netlink service dump.
 */
export async function proxierOverTwins(settings: Partial<ProxierSettings> = {}, opts: { schedulers?: string[]; proc?: boolean } = {}) {
  const clock = new FakeClock();
  const ipvs = new FakeIpvs(opts.schedulers ? { schedulers: opts.schedulers } : {});
  const link = new FakeLink();
  await link.addDummy('eth0');
  await link.addAddress((await link.getLink('eth0')).index, TWIN_NODE_IP);
  const ipset = new FakeIpset({ log: winston.createLogger({ silent: true }) });
  const iptables = new FakeIptables({ family: 'ipv4', ipsets: ipset });
  const services = new ServiceTracker();
  const slices = new EndpointSliceTracker(TWIN_NODE);
  const proxier = new Proxier(
    {
      ipvs, link, ipsets: { ipv4: ipset }, iptables: { ipv4: iptables },
      source: new TrackerSource(services, slices),
      planner: { planServicePort },
      ...(opts.proc ? { readProcIpVs: async () => procIpVsText((await ipvs.listAll()).map((e) => ({ ...e, dests: [...e.dests].reverse() }))) } : {}),
      clock,
      log: winston.createLogger({ silent: true }),
    },
    { ...TWIN_SETTINGS, ...settings },
    { name: TWIN_NODE, zone: '', nodeIPs: [TWIN_NODE_IP], podCIDRs: [] },
  );
  /** let the proxier run what is due after `ms` */
  const settle = async (ms = 0) => {
    await clock.advance(ms);
    await proxier.idle();
  };
  const add = (...objs: (V1Service | V1EndpointSlice)[]) => {
    for (const o of objs) ('spec' in o ? services.onAdd(o as V1Service) : slices.onAdd(o as V1EndpointSlice));
    proxier.sync();
  };
  const replaceSlice = (old: V1EndpointSlice, next: V1EndpointSlice) => {
    slices.onUpdate(old, next);
    proxier.sync();
  };
  const start = async () => {
    proxier.onServicesSynced();
    proxier.onEndpointSlicesSynced();
    await settle();
  };
  return { clock, ipvs, link, ipset, iptables, services, slices, proxier, settle, add, replaceSlice, start };
}
