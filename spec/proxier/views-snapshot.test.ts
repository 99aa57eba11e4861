// The read-only views over a snapshot of the proxier's parts, without a Proxier: the dry run
// reads the kernel as a full sync does and changes nothing kept; status reads the parts.
import winston from 'winston';
import { FakeIpvs } from '../../testkit/kernel/fake-ipvs';
import { FakeLink } from '../../testkit/kernel/fake-link';
import { FakeClock } from '../../testkit/fake-clock';
import { FAKE_SETTINGS } from '../../testkit/proxier-over-fakes';
import { NodeContext } from '../../lib/proxier/node-context';
import { IpvsApplier } from '../../lib/proxier/ipvs-applier';
import { BoundAddresses } from '../../lib/proxier/bound-addresses';
import { DesiredState } from '../../lib/proxier/desired-state';
import { FrontendIds } from '../../lib/proxier/service-list';
import { SyncFigures } from '../../lib/proxier/sync-run';
import { ProxierSnapshot, dryRunFullSync, serviceList, status } from '../../lib/proxier/views';
import { ProxySource } from '../../lib/proxier/types';
import { NotSyncedError } from '../../lib/errors';
import { VirtualServerSpec, virtualServerKey } from '../../lib/model/ipvs';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';

const quiet = winston.createLogger({ silent: true });
const source: ProxySource = {
  take: () => new Map(),
  service: () => ({ ports: [], refusals: [] }),
  serviceNames: () => [],
  servicePorts: () => [],
  endpoints: () => [],
};
const OURS: VirtualServerSpec = {
  af: AF_INET,
  protocol: IPPROTO_TCP,
  address: '10.96.0.10',
  port: 80,
  fwmark: 0,
  scheduler: 'rr',
};
const THEIRS: VirtualServerSpec = { ...OURS, address: '192.0.2.1', port: 443 };

async function setup(initialized = true) {
  const ipvs = new FakeIpvs();
  const link = new FakeLink();
  const clock = new FakeClock();
  const node = new NodeContext(
    {
      link,
      ipsets: {},
      source,
      planner: {
        planServicePort: () => {
          throw new Error('no Service');
        },
      },
      log: quiet,
    },
    FAKE_SETTINGS,
    { name: 'n', zone: '', nodeIPs: ['192.0.2.1'], podCIDRs: [] },
  );
  const applier = new IpvsApplier({ ipvs, clock, log: quiet, retryAfter: () => {} });
  const bound = new BoundAddresses({ link, log: quiet });
  const desired = new DesiredState(
    {
      planService: () => ({ ports: [], plans: [] }),
      facts: node.frontendFacts,
      replanned: () => {},
      refused: () => {},
    },
    ['ipv4'],
  );
  const seen = await node.observe({ linkOps: 0, execs: 0 });
  bound.observed(seen.dummyIndex, seen.bound);
  await applier.run([{ kind: 'newService', vs: OURS }], () => undefined, { ipvsWrites: 0, ipvsFailures: 0 });
  await ipvs.run([{ kind: 'newService', vs: THEIRS }]); // not kube-ipvs's, never read yet
  const snap: ProxierSnapshot = {
    node,
    applier,
    bound,
    source,
    link,
    frontendIds: new FrontendIds(),
    figures: new SyncFigures(),
    index: desired.index,
    plans: desired.plans,
    initialized,
    counts: () => ({ virtualServers: 0, realServers: 0, draining: 0, boundAddresses: bound.size }),
    refused: () => [],
  };
  return { ipvs, applier, snap };
}

describe('views over a snapshot', () => {
  it('the dry run deletes what kube-ipvs applied and no Service wants, never what it did not create, and keeps nothing', async () => {
    const { applier, ipvs, snap } = await setup();
    const writes = ipvs.applied.length;
    const ops = await dryRunFullSync(snap);
    expect(ops).toEqual([
      { kind: 'delService', vs: expect.objectContaining({ address: OURS.address, port: OURS.port }) },
    ]);
    expect(ipvs.applied.length).toBe(writes);
    expect([...applier.applied.keys()]).toEqual([virtualServerKey(OURS)]);
  });

  it('the dry run refuses before the Services and EndpointSlices were listed', async () => {
    const { snap } = await setup(false);
    await expect(dryRunFullSync(snap)).rejects.toBeInstanceOf(NotSyncedError);
  });

  it('status and service list read the parts', async () => {
    const { snap } = await setup();
    const s = await status(snap);
    expect(s.node).toEqual({ name: 'n', ips: ['192.0.2.1'], zone: '', podCIDRs: [] });
    expect(s.devices[0]).toEqual({ name: 'kube-ipvs0', addresses: [], role: 'kube-ipvs0' });
    expect(s.gracefulTermination).toMatchObject({ drainTimeoutSeconds: 600, checkIntervalSeconds: 15 });
    expect(s.initialized).toBe(true);
    expect(serviceList(snap)).toEqual([]);
  });
});
