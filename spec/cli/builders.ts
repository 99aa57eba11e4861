// Plain-data builders for IPVS table entries in CLI tests (addresses: RFC 5737 / 1918 / 3849).
import { VirtualServerEntry } from '../../lib/kernel/ipvs/ipvs';
import { RealServer, Stats, VirtualServer, ZERO_STATS } from '../../lib/model/ipvs';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';

export function vs(p: Partial<VirtualServer> = {}): VirtualServer {
  return {
    af: AF_INET,
    protocol: IPPROTO_TCP,
    address: '10.0.0.1',
    port: 80,
    fwmark: 0,
    scheduler: 'rr',
    flags: 0,
    timeout: 0,
    netmask: 0xffffffff,
    peName: '',
    ...p,
  };
}

export function rs(p: Partial<RealServer> = {}): RealServer {
  return {
    af: AF_INET,
    address: '192.168.0.1',
    port: 80,
    fwdMethod: 0,
    weight: 1,
    uThreshold: 0,
    lThreshold: 0,
    activeConns: 0,
    inactConns: 0,
    persistConns: 0,
    tunType: 0,
    tunPort: 0,
    tunFlags: 0,
    ...p,
  };
}

export function stats(p: Partial<Stats>): Stats {
  return { ...ZERO_STATS, ...p };
}

export function entry(v: VirtualServer, ...dests: RealServer[]): VirtualServerEntry {
  return { vs: v, dests };
}
