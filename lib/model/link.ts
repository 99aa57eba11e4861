/** A network interface and an address as rtnetlink shows them: what lib/kernel/link reads and lib/netlink/rtnl-codec.ts decodes. */
import { IpFamily } from './ip-family';

/** One network interface as RTM_GETLINK shows it. */
export interface LinkInfo {
  readonly index: number;
  readonly name: string;
  /** IFLA_INFO_KIND ("dummy", "veth"...); '' for links without one (lo, physical NICs) */
  readonly kind: string;
  /** IFF_UP */
  readonly up: boolean;
}

/** One address as RTM_GETADDR shows it. */
export interface LinkAddress {
  readonly ifindex: number;
  readonly family: IpFamily;
  /** textual, as inet_ntop prints it ("10.96.0.1", "fd00::1") */
  readonly address: string;
  readonly prefixLen: number;
}
