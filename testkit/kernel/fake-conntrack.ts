import { constants as osConstants } from 'node:os';
import { NetlinkError, errnoName } from '../../lib/errors';
import { ConntrackFlow, describeFlow, flowKey } from '../../lib/model/conntrack';
import { IpFamily, familyOfAddress } from '../../lib/model/ip-family';
import { Conntrack, DeleteFlowsResult } from '../../lib/kernel/conntrack/conntrack';

const E = osConstants.errno;

/**
 * In-memory conntrack table: tests put entries in with `add` (what traffic does to the
 * kernel's table); deletes answer ENOENT as the kernel does for a tuple (or id) not there.
 * Counts its requests: `dumps` (one per listFlows) and `deleteRequests` (one per flow).
 */
export class FakeConntrack implements Conntrack {
  private readonly entries = new Map<string, ConntrackFlow>();
  private nextId = 1;
  dumps = 0;
  deleteRequests = 0;
  closed = false;

  /** Adds an entry as traffic would; the kernel gives it an id. EEXIST for a tuple already there. */
  add(flow: Omit<ConntrackFlow, 'id' | 'zone'> & { zone?: number }): ConntrackFlow {
    for (const a of [flow.orig.src, flow.orig.dst, flow.reply.src, flow.reply.dst]) {
      if (familyOfAddress(a) !== flow.family) throw new TypeError(`${a} is not an ${flow.family} address`);
    }
    const f: ConntrackFlow = { ...flow, zone: flow.zone ?? 0, id: this.nextId++ };
    const k = flowKey(f);
    if (this.entries.has(k))
      throw new NetlinkError(E.EEXIST, 'add conntrack entry', describeFlow(f), errnoName(E.EEXIST));
    this.entries.set(k, f);
    return f;
  }

  /** Every entry, every family (for assertions). */
  all(): ConntrackFlow[] {
    return [...this.entries.values()];
  }

  async listFlows(family: IpFamily, protocol?: number): Promise<ConntrackFlow[]> {
    this.assertOpen();
    this.dumps++;
    return this.all().filter((f) => f.family === family && (protocol === undefined || f.protocol === protocol));
  }

  async deleteFlows(flows: readonly ConntrackFlow[]): Promise<DeleteFlowsResult> {
    this.assertOpen();
    let deleted = 0;
    let gone = 0;
    for (const f of flows) {
      this.deleteRequests++;
      for (const a of [f.orig.src, f.orig.dst]) {
        // the encoder refuses the same way before anything is sent
        if (familyOfAddress(a) !== f.family)
          throw new TypeError(`not an ${f.family === 'ipv4' ? 'IPv4' : 'IPv6'} address: '${a}'`);
      }
      const k = flowKey(f);
      const have = this.entries.get(k);
      if (!have || (f.id !== undefined && have.id !== f.id)) {
        gone++;
        continue;
      }
      this.entries.delete(k);
      deleted++;
    }
    return { deleted, gone, failures: [] };
  }

  close(): void {
    this.closed = true;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('FakeConntrack: used after close');
  }
}
