import { IpvsTimeouts, RealServerId, RealServerSpec, VirtualServerId, VirtualServerSpec } from './ipvs';

/**
 * A change to the IPVS table, as data: what reconcile's diff makes, the proxier applies and
 * Ipvs.run sends. The codec (netlink/ipvs-codec.ts IpvsRequest) encodes these and the reads.
 */
export type IpvsOp =
  | { readonly kind: 'newService'; readonly vs: VirtualServerSpec }
  | { readonly kind: 'setService'; readonly vs: VirtualServerSpec }
  | { readonly kind: 'delService'; readonly vs: VirtualServerId }
  | { readonly kind: 'newDest'; readonly vs: VirtualServerId; readonly rs: RealServerSpec }
  | { readonly kind: 'setDest'; readonly vs: VirtualServerId; readonly rs: RealServerSpec }
  | { readonly kind: 'delDest'; readonly vs: VirtualServerId; readonly rs: RealServerId }
  | { readonly kind: 'setConfig'; readonly timeouts: IpvsTimeouts }
  | { readonly kind: 'zero'; readonly vs?: VirtualServerId }
  | { readonly kind: 'flush' };
