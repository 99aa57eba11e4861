// Golden texts below are written by hand from the compatibility reference
// (shared/reference/kube-proxy-ipvs.md §1.3, kube-proxy proxier.go writeIptablesRules), not
// produced by the generator. The rules each set's members bring, in the kernel's order, are
// step files (spec/golden/cases: empty-cluster, every-set, masquerade-all, the detect-local-*
// and dual-stack-one-cluster-cidr); here what their text cannot show: the restore payload's
// jump lines, the mark's spelling, iptables without --random-fully, refused input.
// Addresses: 10.96.0.0/12 services, 10.244.0.0/16 pods, 203.0.113.0/24 load balancers
// (RFC 5737), fd00::/8 for IPv6.
import { InvalidPlanInputError, UnsafeRuleTextError } from '../../lib/errors';
import { IptablesPlanInput, masqueradeMark, planIptables } from '../../lib/plan/iptables';
import { SetKey } from '../../lib/model/names';
import { JUMP_RULES } from '../../lib/model/iptables';
import { formatIptablesRestore } from '../../lib/kernel/iptables/format-restore';

const text = (s: string) => s.replace(/^\n/, '');

describe('planIptables + formatIptablesRestore', () => {
  it.each([
    [14, '0x004000'],
    [0, '0x000001'],
    [4, '0x000010'],
    [24, '0x1000000'],
    [31, '0x80000000'],
  ])('masquerade bit %i is written as Go %%#08x: %s', (bit, mark) => {
    expect(masqueradeMark(bit)).toBe(mark);
    const plan = planIptables({ family: 'ipv4', masqueradeBit: bit, nonEmptySets: new Set(), randomFully: false });
    expect(plan.nat.rules).toContain(`-A KUBE-MARK-MASQ -j MARK --or-mark ${mark}`);
    expect(plan.filter.rules).toContain(
      `-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark ${mark}/${mark} -j ACCEPT`,
    );
    // iptables without --random-fully: the MASQUERADE rule without it
    expect(plan.nat.rules).toContain(
      '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE',
    );
  });

  it('refuses a masquerade bit outside 0-31', () => {
    expect(() => masqueradeMark(32)).toThrow(RangeError);
  });

  it('puts missing jump rules after the chain declarations of their table, as -I lines in kube-proxy order', () => {
    const plan = planIptables({ family: 'ipv4', nonEmptySets: new Set(), randomFully: true });
    const t = formatIptablesRestore(plan, JUMP_RULES);
    const lines = t.split('\n');
    const natJumps = text(`
:KUBE-MARK-MASQ - [0:0]
-I OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-I PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-I POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-SERVICES -s 127.0.0.0/8 -j RETURN`);
    const filterJumps = text(`
:KUBE-IPVS-OUT-FILTER - [0:0]
-I FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-I INPUT -m comment --comment "kubernetes health check rules" -j KUBE-NODE-PORT
-I INPUT -m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL
-I FORWARD -m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL
-I INPUT -m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER
-I OUTPUT -m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-OUT-FILTER
-A KUBE-SOURCE-RANGES-FIREWALL -j DROP`);
    expect(t).toContain(natJumps);
    expect(t).toContain(filterJumps);
    expect(lines.filter((l) => l.startsWith('-I ')).length).toBe(9);
    // without jumps the payload is the plain one
    expect(t.replace(/^-I .*\n/gm, '')).toBe(formatIptablesRestore(plan));
  });
});

describe('nothing from an API object reaches rule text unparsed', () => {
  const base: IptablesPlanInput = { family: 'ipv4', nonEmptySets: new Set<SetKey>(['CLUSTER_IP']), randomFully: true };
  const NL = '\n-A INPUT -j DROP';

  it.each<[string, Partial<IptablesPlanInput>, string, string]>([
    [
      'an LB IP with a rule after a newline',
      { lbOutFilter: [{ lbIP: `203.0.113.7${NL}`, proto: 'tcp', port: 443 }] },
      'lbOutFilter[0].lbIP',
      'not an IP address',
    ],
    [
      'an LB IP with spaces',
      { lbOutFilter: [{ lbIP: '203.0.113.7 -j ACCEPT', proto: 'tcp', port: 443 }] },
      'lbOutFilter[0].lbIP',
      'not an IP address',
    ],
    [
      'an LB IP of the other family',
      { lbOutFilter: [{ lbIP: 'fd00::7', proto: 'tcp', port: 443 }] },
      'lbOutFilter[0].lbIP',
      'not ipv4',
    ],
    [
      'an LB port out of range',
      { lbOutFilter: [{ lbIP: '203.0.113.7', proto: 'tcp', port: 70000 }] },
      'lbOutFilter[0].port',
      'not a port in 1-65535',
    ],
    [
      'an LB port as text',
      { lbOutFilter: [{ lbIP: '203.0.113.7', proto: 'tcp', port: '443 -j ACCEPT' as unknown as number }] },
      'lbOutFilter[0].port',
      'not a port',
    ],
    [
      'an LB protocol',
      { lbOutFilter: [{ lbIP: '203.0.113.7', proto: 'tcp -j ACCEPT' as 'tcp', port: 443 }] },
      'lbOutFilter[0].proto',
      'not tcp, udp or sctp',
    ],
    ['a cluster CIDR with a newline', { clusterCIDR: `10.244.0.0/16${NL}` }, 'clusterCIDR', 'not a CIDR'],
    [
      'a node CIDR of the other family',
      { localDetector: { kind: 'NodeCIDR', cidr: 'fd00::/64' } },
      'localDetector.cidr',
      'not ipv4',
    ],
    [
      'a node CIDR prefix 33',
      { localDetector: { kind: 'NodeCIDR', cidr: '10.0.0.0/33' } },
      'localDetector.cidr',
      'not a CIDR',
    ],
    [
      'a bridge name with a newline',
      { localDetector: { kind: 'BridgeInterface', iface: 'cbr0\n-j DROP' } },
      'localDetector.iface',
      'whitespace',
    ],
    [
      'a bridge name of 16 characters',
      { localDetector: { kind: 'BridgeInterface', iface: 'abcdefghijklmnop' } },
      'localDetector.iface',
      'longer than 15',
    ],
    [
      'a bridge name with a slash',
      { localDetector: { kind: 'BridgeInterface', iface: 'br/0' } },
      'localDetector.iface',
      "holds '/'",
    ],
    [
      'a bridge name with a colon',
      { localDetector: { kind: 'BridgeInterface', iface: 'eth0:1' } },
      'localDetector.iface',
      "holds ':'",
    ],
    [
      'a bridge name that is a wildcard',
      { localDetector: { kind: 'BridgeInterface', iface: 'veth+' } },
      'localDetector.iface',
      "holds '+'",
    ],
    ['an empty bridge name', { localDetector: { kind: 'BridgeInterface', iface: '' } }, 'localDetector.iface', 'empty'],
    [
      'a prefix with no room for +',
      { localDetector: { kind: 'InterfaceNamePrefix', prefix: 'abcdefghijklmno' } },
      'localDetector.prefix',
      'longer than 14',
    ],
    [
      'a prefix with a quote',
      { localDetector: { kind: 'InterfaceNamePrefix', prefix: 'veth"' } },
      'localDetector.prefix',
      `holds '"'`,
    ],
  ])('refuses %s, naming the field', (_n, over, field, reason) => {
    let err: unknown;
    try {
      planIptables({ ...base, ...over });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidPlanInputError);
    expect(err).toMatchObject({ code: 'KIPVS_INVALID_PLAN_INPUT', field });
    expect((err as Error).message).toContain(reason);
    expect((err as Error).message).not.toContain('\n');
  });

  it('prints addresses, CIDRs and protocols canonically', () => {
    const v6 = planIptables({
      family: 'ipv6',
      nonEmptySets: new Set<SetKey>(['CLUSTER_IP']),
      randomFully: true,
      clusterCIDR: 'FD00:0:0:1::5/64',
      lbOutFilter: [{ lbIP: 'FD00:0::7', proto: 'UDP' as 'udp', port: 53 }],
    });
    expect(v6.filter.rules).toContain(
      '-A KUBE-IPVS-OUT-FILTER -s fd00::7 -m ipvs --vaddr fd00::7 --vproto udp --vport 53 -j DROP',
    );
    expect(v6.nat.rules.join('\n')).toContain('! -s fd00:0:0:1::/64 -j KUBE-MARK-MASQ');
    const v4 = planIptables({ ...base, localDetector: { kind: 'NodeCIDR', cidr: '10.244.3.7/24' } });
    expect(v4.nat.rules.join('\n')).toContain('! -s 10.244.3.0/24 -j KUBE-MARK-MASQ');
  });

  it.each([
    ['a newline', '-A KUBE-IPVS-OUT-FILTER -s 203.0.113.7\n-A INPUT -j DROP', 'newline'],
    ['a carriage return', '-A KUBE-IPVS-OUT-FILTER -s 203.0.113.7\r-j DROP', 'newline'],
    ['a built-in chain', '-A INPUT -j DROP', 'chain INPUT is not one of'],
    ['a chain of the other table', '-A KUBE-MARK-MASQ -j ACCEPT', 'chain KUBE-MARK-MASQ is not one of'],
    ['not an -A line', '-F KUBE-FORWARD', "not an '-A CHAIN ...' rule"],
    ['an unbalanced quote', '-A KUBE-FORWARD -m comment --comment "x -j ACCEPT', 'unbalanced quote'],
  ])('the rule writer refuses a rule with %s', (_n, rule, reason) => {
    const plan = planIptables(base);
    const forged = { ...plan, filter: { ...plan.filter, rules: [...plan.filter.rules, rule] } };
    let err: unknown;
    try {
      formatIptablesRestore(forged);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UnsafeRuleTextError);
    expect(err).toMatchObject({ code: 'KIPVS_UNSAFE_RULE_TEXT', rule });
    expect((err as Error).message).toContain(reason);
  });
});
