/**
 * kube-proxy IPVS-mode iptables rules (K8S pkg/proxy/ipvs/proxier.go `writeIptablesRules`,
 * `createAndLinkKubeChain`, `acceptIPVSTraffic`, recent), as data. The jump rules, chain list and
 * plan shape are model/iptables.ts; the restore text is kernel/iptables/format-restore.ts. Pure.
 */
import { InvalidPlanInputError } from '../errors';
import { IFNAME_MAX_LENGTH, formatCidr, interfaceNameProblem, parseAddress, parseCidr } from '../model/address';
import { IPSET_INFO, IpsetProto } from '../model/ipset';
import { IptablesPlan, JUMP_RULES, KUBE_CHAINS } from '../model/iptables';
import { IpFamily } from '../model/ip-family';
import { Chain, ChainName, SetKey, SetName, Table, ipsetName } from '../model/names';

/**
 * How "traffic from this node's pods" is told apart (kube-proxy pkg/proxy/util/localdetector.go).
 * planIptables validates it: `cidr` a CIDR of the plan's family (printed with host bits
 * cleared), `iface` a Linux interface name, `prefix` one that leaves room for iptables' '+'.
 */
export type LocalDetector =
  | { readonly kind: 'ClusterCIDR'; readonly cidr: string }
  | { readonly kind: 'NodeCIDR'; readonly cidr: string }
  | { readonly kind: 'BridgeInterface'; readonly iface: string }
  | { readonly kind: 'InterfaceNamePrefix'; readonly prefix: string };

/**
 * An LB ingress the node itself must not reach through IPVS (issue #119656). planIptables
 * validates it: `lbIP` an address of the plan's family (printed canonical), `proto` tcp, udp
 * or sctp (any case), `port` 1-65535.
 */
export interface LbOutFilterEntry {
  readonly lbIP: string;
  readonly proto: IpsetProto;
  readonly port: number;
}

/** What the iptables plan of one family is made from: masquerade and local-traffic settings, sets. */
export interface IptablesPlanInput {
  readonly family: IpFamily;
  /** default 14 (mark 0x004000) */
  readonly masqueradeBit?: number;
  readonly masqueradeAll?: boolean;
  /** shorthand for localDetector {kind: 'ClusterCIDR'} */
  readonly clusterCIDR?: string;
  readonly localDetector?: LocalDetector;
  /** sets that have members: only they get their rules (kube-proxy `!isEmpty()`) */
  readonly nonEmptySets: ReadonlySet<SetKey>;
  readonly lbOutFilter?: readonly LbOutFilterEntry[];
  /** iptables supports MASQUERADE --random-fully */
  readonly randomFully: boolean;
}

/** kube-proxy's mark text: fmt.Sprintf("%#08x", 1<<bit), e.g. 0x004000. */
export function masqueradeMark(bit: number): string {
  if (!Number.isInteger(bit) || bit < 0 || bit > 31) throw new RangeError(`masquerade bit out of range 0-31: ${bit}`);
  return '0x' + (2 ** bit).toString(16).padStart(6, '0');
}

/** The IfNotLocal() arguments of a detector. */
export function ifNotLocal(d: LocalDetector): string {
  switch (d.kind) {
    case 'ClusterCIDR':
    case 'NodeCIDR':
      return `! -s ${d.cidr}`;
    case 'BridgeInterface':
      return `! -i ${d.iface}`;
    case 'InterfaceNamePrefix':
      return `! -i ${d.prefix}+`;
  }
}

/** kube-proxy `ipsetWithIptablesChain`: set -> rule in a chain, only when the set is non-empty. */
const SET_RULES: readonly {
  set: SetKey;
  table: Table;
  from: ChainName;
  to: string;
  match: string;
  proto?: IpsetProto;
}[] = [
  { set: 'LOOP_BACK', table: 'nat', from: Chain.POSTROUTING, to: 'MASQUERADE', match: 'dst,dst,src' },
  { set: 'LOAD_BALANCER', table: 'nat', from: Chain.SERVICES, to: Chain.LOAD_BALANCER, match: 'dst,dst' },
  { set: 'LOAD_BALANCER_LOCAL', table: 'nat', from: Chain.LOAD_BALANCER, to: 'RETURN', match: 'dst,dst' },
  { set: 'NODE_PORT_LOCAL_TCP', table: 'nat', from: Chain.NODE_PORT, to: 'RETURN', match: 'dst', proto: 'tcp' },
  { set: 'NODE_PORT_TCP', table: 'nat', from: Chain.NODE_PORT, to: Chain.MARK_MASQ, match: 'dst', proto: 'tcp' },
  { set: 'NODE_PORT_LOCAL_UDP', table: 'nat', from: Chain.NODE_PORT, to: 'RETURN', match: 'dst', proto: 'udp' },
  { set: 'NODE_PORT_UDP', table: 'nat', from: Chain.NODE_PORT, to: Chain.MARK_MASQ, match: 'dst', proto: 'udp' },
  { set: 'NODE_PORT_LOCAL_SCTP', table: 'nat', from: Chain.NODE_PORT, to: 'RETURN', match: 'dst,dst', proto: 'sctp' },
  { set: 'NODE_PORT_SCTP', table: 'nat', from: Chain.NODE_PORT, to: Chain.MARK_MASQ, match: 'dst,dst', proto: 'sctp' },
  {
    set: 'LOAD_BALANCER_FW',
    table: 'filter',
    from: Chain.PROXY_FIREWALL,
    to: Chain.SOURCE_RANGES_FIREWALL,
    match: 'dst,dst',
  },
  {
    set: 'LOAD_BALANCER_SOURCE_CIDR',
    table: 'filter',
    from: Chain.SOURCE_RANGES_FIREWALL,
    to: 'RETURN',
    match: 'dst,dst,src',
  },
  {
    set: 'LOAD_BALANCER_SOURCE_IP',
    table: 'filter',
    from: Chain.SOURCE_RANGES_FIREWALL,
    to: 'RETURN',
    match: 'dst,dst,src',
  },
];

const COMMENT: Readonly<Record<SetKey, string>> = Object.fromEntries(
  IPSET_INFO.map((i) => [i.key, i.comment]),
) as Record<SetKey, string>;

const PLAN_PROTOS: readonly string[] = ['tcp', 'udp', 'sctp'] satisfies IpsetProto[];

/**
 * The input with every value that reaches rule text parsed and re-printed canonically; the
 * `clusterCIDR` shorthand folded into `localDetector`. Throws InvalidPlanInputError naming the
 * field (`lbOutFilter[2].lbIP`, `localDetector.iface`, ...).
 */
export function validatePlanInput(input: IptablesPlanInput): IptablesPlanInput {
  const { family } = input;
  if (family !== 'ipv4' && family !== 'ipv6')
    throw new InvalidPlanInputError('family', String(family), 'not ipv4 or ipv6');
  const fail = (field: string, value: unknown, reason: string): never => {
    throw new InvalidPlanInputError(field, String(value), reason);
  };
  const cidr = (field: string, value: unknown): string => {
    const c = parseCidr(value);
    if (!c) return fail(field, value, 'not a CIDR');
    if (c.family !== family) return fail(field, value, `not ${family}`);
    return formatCidr(c);
  };
  const ifname = (field: string, value: unknown, max: number): string => {
    const problem =
      interfaceNameProblem(value) ?? (String(value).length > max ? `longer than ${max} characters` : undefined);
    return problem ? fail(field, value, `not an interface name: ${problem}`) : String(value);
  };
  let localDetector: LocalDetector | undefined;
  const d = input.localDetector;
  if (d) {
    switch (d.kind) {
      case 'ClusterCIDR':
      case 'NodeCIDR':
        localDetector = { kind: d.kind, cidr: cidr('localDetector.cidr', d.cidr) };
        break;
      case 'BridgeInterface':
        localDetector = { kind: d.kind, iface: ifname('localDetector.iface', d.iface, IFNAME_MAX_LENGTH) };
        break;
      case 'InterfaceNamePrefix':
        // iptables appends '+' and the whole must fit IFNAMSIZ
        localDetector = { kind: d.kind, prefix: ifname('localDetector.prefix', d.prefix, IFNAME_MAX_LENGTH - 1) };
        break;
      default:
        fail(
          'localDetector.kind',
          (d as { kind: unknown }).kind,
          'not ClusterCIDR, NodeCIDR, BridgeInterface or InterfaceNamePrefix',
        );
    }
  } else if (input.clusterCIDR !== undefined && input.clusterCIDR !== '') {
    localDetector = { kind: 'ClusterCIDR', cidr: cidr('clusterCIDR', input.clusterCIDR) };
  }
  const lbOutFilter = (input.lbOutFilter ?? []).map((e, i): LbOutFilterEntry => {
    const field = `lbOutFilter[${i}]`;
    const ip = parseAddress(e.lbIP);
    if (!ip) return fail(`${field}.lbIP`, e.lbIP, 'not an IP address');
    if (ip.family !== family) return fail(`${field}.lbIP`, e.lbIP, `not ${family}`);
    const proto = typeof e.proto === 'string' ? e.proto.toLowerCase() : '';
    if (!PLAN_PROTOS.includes(proto)) return fail(`${field}.proto`, e.proto, 'not tcp, udp or sctp');
    if (typeof e.port !== 'number' || !Number.isInteger(e.port) || e.port < 1 || e.port > 65535) {
      return fail(`${field}.port`, e.port, 'not a port in 1-65535');
    }
    return { lbIP: ip.text, proto: proto as IpsetProto, port: e.port };
  });
  const { clusterCIDR: _shorthand, ...rest } = input;
  return { ...rest, ...(localDetector ? { localDetector } : {}), lbOutFilter };
}

/** kube-proxy's rules for one family, in its order. */
export function planIptables(raw: IptablesPlanInput): IptablesPlan {
  const input = validatePlanInput(raw);
  const { family } = input;
  const mark = masqueradeMark(input.masqueradeBit ?? 14);
  const set = (k: SetKey) => ipsetName(SetName[k], family);
  const nat: string[] = [`-A ${Chain.SERVICES} -s ${family === 'ipv4' ? '127.0.0.0/8' : '::1/128'} -j RETURN`];
  const filter: string[] = [];
  for (const r of SET_RULES) {
    if (!input.nonEmptySets.has(r.set)) continue;
    const proto = r.proto ? ` -p ${r.proto}` : '';
    (r.table === 'nat' ? nat : filter).push(
      `-A ${r.from}${proto} ${comment(r.set)} -m set --match-set ${set(r.set)} ${r.match} -j ${r.to}`,
    );
  }
  nat.push(...serviceRules(input, set));
  filter.push(...filterRules(input, set, mark));
  nat.push(...masqueradeRules(mark, input.randomFully));
  return {
    family,
    jumps: JUMP_RULES,
    nat: { chains: KUBE_CHAINS.nat, rules: nat },
    filter: { chains: KUBE_CHAINS.filter, rules: filter },
  };
}

const comment = (k: SetKey) => `-m comment --comment "${COMMENT[k]}"`;

/**
 * nat KUBE-SERVICES after the per-set rules: which Service traffic is marked for masquerade
 * (cluster IPs by the local detector, external IPs) or accepted as it is, the jump to
 * KUBE-NODE-PORT, and kube-proxy's acceptIPVSTraffic last.
 */
function serviceRules(input: IptablesPlanInput, set: (k: SetKey) => string): string[] {
  const live = input.nonEmptySets;
  const nat: string[] = [];
  if (live.has('CLUSTER_IP')) {
    const head = `-A ${Chain.SERVICES} ${comment('CLUSTER_IP')} -m set --match-set ${set('CLUSTER_IP')}`;
    const detector = input.localDetector;
    if (input.masqueradeAll) nat.push(`${head} dst,dst -j ${Chain.MARK_MASQ}`);
    else if (detector) nat.push(`${head} dst,dst ${ifNotLocal(detector)} -j ${Chain.MARK_MASQ}`);
    else nat.push(`${head} src,dst -j ${Chain.MARK_MASQ}`);
  }
  const externalIpRules = (head: string): void => {
    nat.push(`${head} -m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL -j ACCEPT`);
    nat.push(`${head} -m addrtype --dst-type LOCAL -j ACCEPT`);
  };
  if (live.has('EXTERNAL_IP')) {
    const head = `-A ${Chain.SERVICES} ${comment('EXTERNAL_IP')} -m set --match-set ${set('EXTERNAL_IP')} dst,dst`;
    nat.push(`${head} -j ${Chain.MARK_MASQ}`);
    externalIpRules(head);
  }
  if (live.has('EXTERNAL_IP_LOCAL')) {
    externalIpRules(
      `-A ${Chain.SERVICES} ${comment('EXTERNAL_IP_LOCAL')} -m set --match-set ${set('EXTERNAL_IP_LOCAL')} dst,dst`,
    );
  }
  nat.push(`-A ${Chain.SERVICES} -m addrtype --dst-type LOCAL -j ${Chain.NODE_PORT}`);
  nat.push(`-A ${Chain.LOAD_BALANCER} -j ${Chain.MARK_MASQ}`);
  // acceptIPVSTraffic(): last rules of KUBE-SERVICES
  for (const k of ['CLUSTER_IP', 'LOAD_BALANCER'] as const) {
    if (live.has(k)) nat.push(`-A ${Chain.SERVICES} -m set --match-set ${set(k)} dst,dst -j ACCEPT`);
  }
  return nat;
}

/**
 * filter after the per-set rules: what is dropped (source ranges, a load balancer's own
 * traffic to itself: KUBE-IPVS-OUT-FILTER), forwarded (marked or established), and the
 * KUBE-IPVS-FILTER that rejects new connections to an address with no Service port.
 */
function filterRules(input: IptablesPlanInput, set: (k: SetKey) => string, mark: string): string[] {
  const filter: string[] = [`-A ${Chain.SOURCE_RANGES_FIREWALL} -j DROP`];
  for (const e of input.lbOutFilter ?? []) {
    filter.push(
      `-A ${Chain.IPVS_OUT_FILTER} -s ${e.lbIP} -m ipvs --vaddr ${e.lbIP} --vproto ${e.proto} --vport ${e.port} -j DROP`,
    );
  }
  filter.push(
    `-A ${Chain.FORWARD} -m comment --comment "kubernetes forwarding rules" -m mark --mark ${mark}/${mark} -j ACCEPT`,
  );
  filter.push(
    `-A ${Chain.FORWARD} -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`,
  );
  filter.push(
    `-A ${Chain.NODE_PORT} ${comment('HEALTH_CHECK_NODE_PORT')} -m set --match-set ${set('HEALTH_CHECK_NODE_PORT')} dst -j ACCEPT`,
  );
  for (const k of ['LOAD_BALANCER', 'CLUSTER_IP', 'EXTERNAL_IP', 'EXTERNAL_IP_LOCAL'] as const) {
    filter.push(`-A ${Chain.IPVS_FILTER} -m set --match-set ${set(k)} dst,dst -j RETURN`);
  }
  filter.push(`-A ${Chain.IPVS_FILTER} -m set --match-set ${set('HEALTH_CHECK_NODE_PORT')} dst -j RETURN`);
  filter.push(`-A ${Chain.IPVS_FILTER} -m conntrack --ctstate NEW -m set --match-set ${set('IPVS_IPS')} dst -j REJECT`);
  return filter;
}

/** nat KUBE-POSTROUTING and KUBE-MARK-MASQ: marked traffic is masqueraded, the mark cleared. */
function masqueradeRules(mark: string, randomFully: boolean): string[] {
  return [
    `-A ${Chain.POSTROUTING} -m mark ! --mark ${mark}/${mark} -j RETURN`,
    `-A ${Chain.POSTROUTING} -j MARK --xor-mark ${mark}`,
    `-A ${Chain.POSTROUTING} -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE${randomFully ? ' --random-fully' : ''}`,
    `-A ${Chain.MARK_MASQ} -j MARK --or-mark ${mark}`,
  ];
}
