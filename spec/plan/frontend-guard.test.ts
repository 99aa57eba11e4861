import { FrontendFacts, sameWithholding, withheldRefusal, withholding } from '../../lib/plan/frontend-guard';
import { DesiredFrontend } from '../../lib/plan/service-plan';
import { AF_INET, AF_INET6, IPPROTO_TCP, IPPROTO_UDP } from '../../lib/uapi/inet';
import type { FrontendType } from '../../lib/model/views';

const OWNER = 'ns1/svc1:p80/ipv4';

function frontend(address: string, port: number, kind: FrontendType, protocol = IPPROTO_TCP): DesiredFrontend {
  const af = address.includes(':') ? AF_INET6 : AF_INET;
  const proto = protocol === IPPROTO_TCP ? 'TCP' : 'UDP';
  return {
    key: `${proto}/${af === AF_INET6 ? `[${address}]` : address}:${port}`,
    virtualServer: {
      vs: { af, protocol, address, port, fwmark: 0, scheduler: 'rr', flags: 0, timeout: 0, netmask: 0xffffffff },
      realServers: [],
      owner: OWNER,
      kind,
    },
    field: kind === 'NodePort' ? 'spec.ports[].nodePort' : 'spec.externalIPs',
    ipsetEntries: [],
  };
}

describe('withholding (what the node does not give a frontend)', () => {
  const foreign = new Map([['TCP/203.0.113.10:80', 'keepalived']]);
  const facts: FrontendFacts = { excludeCIDRs: ['203.0.113.0/28', '2001:db8:ff::/48'], foreign: (k) => foreign.get(k) };

  it('excludeCIDRs first, naming the CIDR that holds the address, in either family', () => {
    // inside both: the configuration's reason wins
    expect(withholding('TCP/203.0.113.10:80', '203.0.113.10', facts)).toEqual({
      kind: 'excluded',
      cidr: '203.0.113.0/28',
    });
    expect(withholding('TCP/[2001:db8:ff::1]:80', '2001:db8:ff::1', facts)).toEqual({
      kind: 'excluded',
      cidr: '2001:db8:ff::/48',
    });
    expect(withholding('TCP/203.0.113.16:80', '203.0.113.16', facts)).toBeUndefined();
  });

  it('a foreign virtual server withholds its exact key only', () => {
    const none: FrontendFacts = { excludeCIDRs: [], foreign: (k) => foreign.get(k) };
    expect(withholding('TCP/203.0.113.10:80', '203.0.113.10', none)).toEqual({ kind: 'foreign', why: 'keepalived' });
    expect(withholding('TCP/203.0.113.10:443', '203.0.113.10', none)).toBeUndefined();
    expect(withholding('UDP/203.0.113.10:80', '203.0.113.10', none)).toBeUndefined();
  });

  it("the refusal names the Service's field, the address and the port; a NodePort on an excluded node address is not refused", () => {
    const ext = frontend('203.0.113.10', 80, 'ExternalIP');
    expect(withheldRefusal(OWNER, ext, { kind: 'excluded', cidr: '203.0.113.0/28' })).toEqual({
      kind: 'Service',
      namespace: 'ns1',
      name: 'svc1',
      field: 'spec.externalIPs',
      value: '203.0.113.10',
      reason:
        'inside ipvs.excludeCIDRs 203.0.113.0/28: kube-ipvs never creates, changes or deletes a virtual server there (port TCP/80 not programmed on it)',
      eventReason: 'VIPInExcludedCIDR',
    });
    const np = frontend('192.0.2.2', 30053, 'NodePort', IPPROTO_UDP);
    expect(withheldRefusal(OWNER, np, { kind: 'excluded', cidr: '192.0.2.2/32' })).toBeUndefined();
    expect(withheldRefusal(OWNER, np, { kind: 'foreign', why: 'found' })).toMatchObject({
      field: 'spec.ports[].nodePort',
      value: '192.0.2.2',
      reason: expect.stringContaining('(port UDP/30053 not programmed on 192.0.2.2)'),
      eventReason: 'ForeignVirtualServer',
    });
  });

  it('sameWithholding: the same kind for the same reason', () => {
    expect(sameWithholding(undefined, undefined)).toBe(true);
    expect(sameWithholding(undefined, { kind: 'foreign', why: 'a' })).toBe(false);
    expect(sameWithholding({ kind: 'foreign', why: 'a' }, { kind: 'foreign', why: 'a' })).toBe(true);
    expect(sameWithholding({ kind: 'foreign', why: 'a' }, { kind: 'foreign', why: 'b' })).toBe(false);
    expect(sameWithholding({ kind: 'excluded', cidr: 'x' }, { kind: 'foreign', why: 'x' })).toBe(false);
    expect(sameWithholding({ kind: 'excluded', cidr: 'x' }, { kind: 'excluded', cidr: 'x' })).toBe(true);
  });
});
