// The node context alone, over the link fake: what a full sync's observation reads and
// creates, the plan contexts made from it, and the memory of virtual servers that are not
// kube-ipvs's (classified when first seen, forgotten when gone).
import winston from 'winston';
import { FakeLink } from '../../testkit/kernel/fake-link';
import { KUBE_IPVS0 } from '../../lib/kernel/link/link';
import { NodeContext, findKubeIpvs0, readNodeAddresses } from '../../lib/proxier/node-context';
import { ProxySource, Planner } from '../../lib/proxier/types';
import { FAKE_SETTINGS } from '../../testkit/proxier-over-fakes';
import { VirtualServer, virtualServerKey } from '../../lib/model/ipvs';
import { IpvsTable, TableEntry } from '../../lib/reconcile/ipvs-table';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';

const quiet = winston.createLogger({ silent: true });
const NODE = { name: 'node-a', zone: 'z1', nodeIPs: ['192.0.2.1'], podCIDRs: [] };
const source: ProxySource = {
  take: () => new Map(),
  service: () => ({ ports: [], refusals: [] }),
  serviceNames: () => [],
  servicePorts: () => [],
  endpoints: () => [],
};
const planner: Planner = {
  planServicePort: () => {
    throw new Error('not planned here');
  },
};
const VS: VirtualServer = {
  af: AF_INET,
  protocol: IPPROTO_TCP,
  address: '192.0.2.1',
  port: 443,
  fwmark: 0,
  scheduler: 'rr',
  flags: 0,
  timeout: 0,
  netmask: 0xffffffff,
  peName: '',
};
const KEY = virtualServerKey(VS);

function setup() {
  const link = new FakeLink();
  const eth0 = link.seedLink('eth0', '', true);
  link.seedAddress(eth0.index, '192.0.2.1', 24);
  const ctx = new NodeContext({ link, ipsets: {}, source, planner, log: quiet }, FAKE_SETTINGS, NODE);
  return { link, ctx };
}
const table = (...vss: VirtualServer[]): IpvsTable =>
  new Map(vss.map((vs) => [virtualServerKey(vs), new TableEntry(vs)]));

describe('NodeContext', () => {
  it("observe creates kube-ipvs0 once, splits its addresses from the other links', and says when the contexts changed", async () => {
    const { link, ctx } = setup();
    const counts = { linkOps: 0, execs: 0 };
    const first = await ctx.observe(counts);
    expect(counts).toEqual({ linkOps: 5, execs: 0 }); // lookup, create, lookup; two address dumps
    expect(first.contextsChanged).toBe(true);
    expect(first.dummyIndex).toBe(await findKubeIpvs0(link));
    expect(ctx.localAddresses.map((a) => a.address).sort()).toEqual(['127.0.0.1', '192.0.2.1', '::1']);
    const again = await ctx.observe(counts);
    expect(counts.linkOps).toBe(5 + 3);
    expect(again.contextsChanged).toBe(false);
  });

  it("readNodeAddresses: kube-ipvs0's addresses are bound, the rest local; findKubeIpvs0 creates nothing", async () => {
    const { link } = setup();
    expect(await findKubeIpvs0(link)).toBeUndefined();
    const dummy = link.seedLink(KUBE_IPVS0, 'dummy');
    link.seedAddress(dummy.index, '10.96.0.10', 32);
    const counts = { linkOps: 0 };
    const { bound, local } = await readNodeAddresses(link, await findKubeIpvs0(link), counts);
    expect([...bound]).toEqual(['10.96.0.10']);
    expect(local.map((a) => a.address)).not.toContain('10.96.0.10');
    expect(counts.linkOps).toBe(2);
  });

  it('plan contexts carry the node and its NodePort addresses; the frontend facts the live foreign memory', async () => {
    const { ctx } = setup();
    await ctx.observe({ linkOps: 0, execs: 0 });
    const c = ctx.planContexts(ctx.localAddresses).get('ipv4')!;
    expect(c).toMatchObject({
      family: 'ipv4',
      nodeName: 'node-a',
      nodeZone: 'z1',
      nodeIPs: ['192.0.2.1'],
      scheduler: 'rr',
    });
    expect(c.nodePortAddresses).toContain('192.0.2.1');
    expect(ctx.frontendFacts.foreign(KEY)).toBeUndefined();
    ctx.markForeign(KEY, VS, 'test');
    expect(ctx.frontendFacts.foreign(KEY)).toBe('test');
  });

  it('a virtual server kube-ipvs did not create is foreign when first seen, claimed if wanted, and forgotten when gone', async () => {
    const { ctx } = setup();
    await ctx.observe({ linkOps: 0, execs: 0 });
    const never = () => false;
    expect(ctx.wantsUnknown(new Map([[KEY, { vs: VS }]]), never)).toBe(true);
    expect(ctx.wantsUnknown(new Map([[KEY, { vs: VS }]]), () => true)).toBe(false);
    const claim = { kind: 'NodePort' as const, vs: { scheduler: 'rr' }, realServers: [] };
    const claims = (k: string) => (k === KEY ? claim : undefined);
    const first = ctx.classifyTable(table(VS), never, never, claims);
    expect(first).toEqual({ claimed: [KEY], gone: [] });
    expect(ctx.isForeign(KEY)).toBe(true);
    expect(ctx.ownershipFacts().foreign(KEY)).toBeDefined();
    // seen again: not classified again
    expect(ctx.classifyTable(table(VS), never, never, claims)).toEqual({ claimed: [], gone: [] });
    expect(ctx.classifyTable(table(), never, never, claims)).toEqual({ claimed: [], gone: [KEY] });
    expect(ctx.isForeign(KEY)).toBe(false);
    // one it created is its own
    expect(ctx.classifyTable(table(VS), never, () => true, claims)).toEqual({ claimed: [], gone: [] });
    expect(ctx.isForeign(KEY)).toBe(false);
  });

  it('excludeCIDRs follow the settings', () => {
    const { ctx } = setup();
    expect(ctx.excluded('192.0.2.1')).toBe(false);
    ctx.setSettings({ ...FAKE_SETTINGS, excludeCIDRs: ['192.0.2.0/24'] });
    expect(ctx.excluded('192.0.2.1')).toBe(true);
  });
});
