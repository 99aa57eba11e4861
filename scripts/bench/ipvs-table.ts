// The benchmark table: N services x M real servers, as IpvsOps and as ipvsadm-restore text.
import { IpvsOp } from '../../lib/kernel/ipvs/ipvs';
import { VirtualServerId } from '../../lib/model/ipvs';

export interface BenchTable {
  readonly ops: IpvsOp[];
  readonly restoreText: string;
}

export function buildBenchTable(services: number, destsPerService: number): BenchTable {
  const ops: IpvsOp[] = [];
  const lines: string[] = [];
  for (let i = 0; i < services; i++) {
    // cluster IPs from 10.96.0.0/12, like a real cluster's service CIDR
    const address = `10.${96 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
    const vs: VirtualServerId = { af: 2, protocol: 6, address, port: 80, fwmark: 0 };
    ops.push({ kind: 'newService', vs: { ...vs, scheduler: 'rr' } });
    lines.push(`-A -t ${address}:80 -s rr`);
    for (let j = 0; j < destsPerService; j++) {
      const n = i * destsPerService + j;
      // pod IPs from 172.16.0.0/12
      const rs = `172.${16 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`;
      ops.push({ kind: 'newDest', vs, rs: { af: 2, address: rs, port: 8080, fwdMethod: 0, weight: 1 } });
      lines.push(`-a -t ${address}:80 -r ${rs}:8080 -m -w 1`);
    }
  }
  return { ops, restoreText: lines.join('\n') + '\n' };
}
