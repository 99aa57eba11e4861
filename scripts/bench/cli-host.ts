// The CLI's own (JavaScript) cost on the host, without a kernel, for profiling against a
// scripted one: `kube-ipvs ipvsadm -R` of N x M restore text into IpvsNetlink over a transport
// that acks every datagram, and `-Sn` of the same table from a scripted service dump plus
// its /proc/net/ip_vs text (what the real -Sn reads). Process start and module load are not
// in these times (scripts/bench/ipvs-bench.ts `cli` times the whole process in the VM).
//
//   node [--cpu-prof] dist/scripts/bench/cli-host.js restore|save|both [SERVICES] [DESTS] [ROUNDS]
import { main } from '../../lib/cli/ipvsadm/ipvsadm';
import { IpvsNetlink } from '../../lib/kernel/ipvs/ipvs-netlink';
import { VirtualServerEntry } from '../../lib/kernel/ipvs/ipvs';
import { realServerOf } from '../../lib/model/ipvs';
import { NetlinkTransport } from '../../lib/netlink/socket';
import { IPVS_CMD, IPVS_CMD_ATTR, IPVS_INFO_ATTR, IPVS_SVC_ATTR } from '../../lib/uapi/ip_vs';
import { be16, be32, cstr, genlMsg, ipv4in16, nla, nlDone, plainNest, u16, u32 } from '../../testkit/nl-builder';
import { procIpVsText } from '../../testkit/proc-ip-vs-text';
import { buildBenchTable } from './ipvs-table';

const [what = 'both', servicesArg = '10000', destsArg = '10', roundsArg = '3'] = process.argv.slice(2);
const services = Number(servicesArg);
const dests = Number(destsArg);
const FAMILY = 0x23;
const NLM_F_ACK = 4;
const NLM_F_DUMP = 0x300;

/** The kernel's answers to -R and -Sn: acks for batches, a scripted service dump, GET_INFO. */
class ScriptedKernel implements NetlinkTransport {
  private deliver: (d: Buffer) => void = () => undefined;
  constructor(private readonly serviceReplies: (seq: number) => Buffer[]) {}
  async send(d: Buffer): Promise<void> {
    const out: Buffer[] = [];
    for (let off = 0; off < d.length;) {
      const len = d.readUInt32LE(off);
      const flags = d.readUInt16LE(off + 6);
      const seq = d.readUInt32LE(off + 8);
      const cmd = d.readUInt8(off + 16);
      if ((flags & NLM_F_DUMP) === NLM_F_DUMP && cmd === IPVS_CMD.GET_SERVICE) out.push(...this.serviceReplies(seq));
      else if (cmd === IPVS_CMD.GET_INFO) {
        out.push(
          genlMsg(
            { type: FAMILY, flags: 0, seq, cmd: IPVS_CMD.SET_INFO },
            nla(IPVS_INFO_ATTR.VERSION, u32(0x010201)),
            nla(IPVS_INFO_ATTR.CONN_TAB_SIZE, u32(4096)),
          ),
        );
        out.push(ackOf(d, off, 0));
      } else if (flags & NLM_F_ACK) out.push(ackOf(d, off, 0));
      off += (len + 3) & ~3;
    }
    setImmediate(() => {
      for (const o of out) this.deliver(o);
    });
  }
  onDatagram(cb: (d: Buffer) => void): void {
    this.deliver = cb;
  }
  onError(): void {}
  close(): void {}
}

/** NLMSG_ERROR (CAPPED) answering the request at `off` of datagram `d` */
function ackOf(d: Buffer, off: number, errno: number): Buffer {
  const b = Buffer.alloc(36);
  b.writeUInt32LE(36, 0);
  b.writeUInt16LE(2, 4);
  b.writeUInt16LE(0x100, 6);
  b.writeUInt32LE(d.readUInt32LE(off + 8), 8);
  b.writeInt32LE(-errno, 16);
  d.copy(b, 20, off, off + 16);
  return b;
}

/** The service dump's datagrams, built once; each request gets a copy with its seq. */
function serviceDump(entries: readonly VirtualServerEntry[]): (seq: number) => Buffer[] {
  const datagrams: Buffer[] = [];
  let part: Buffer[] = [];
  let size = 0;
  for (const { vs } of entries) {
    const m = genlMsg(
      { type: FAMILY, flags: 2, seq: 0, cmd: IPVS_CMD.NEW_SERVICE },
      plainNest(
        IPVS_CMD_ATTR.SERVICE,
        nla(IPVS_SVC_ATTR.AF, u16(vs.af)),
        nla(IPVS_SVC_ATTR.PROTOCOL, u16(vs.protocol)),
        nla(IPVS_SVC_ATTR.ADDR, ipv4in16(vs.address)),
        nla(IPVS_SVC_ATTR.PORT, be16(vs.port)),
        nla(IPVS_SVC_ATTR.SCHED_NAME, cstr(vs.scheduler)),
        nla(IPVS_SVC_ATTR.FLAGS, Buffer.concat([u32(2), u32(0xffffffff)])),
        nla(IPVS_SVC_ATTR.TIMEOUT, u32(0)),
        nla(IPVS_SVC_ATTR.NETMASK, be32(0xffffffff)),
        nla(IPVS_SVC_ATTR.STATS64, Buffer.alloc(10 * 12)),
      ),
    );
    part.push(m);
    size += m.length;
    if (size > 16000) {
      datagrams.push(Buffer.concat(part));
      part = [];
      size = 0;
    }
  }
  part.push(nlDone(0));
  datagrams.push(Buffer.concat(part));
  return (seq) =>
    datagrams.map((d) => {
      const c = Buffer.from(d);
      for (let off = 0; off < c.length; off += c.readUInt32LE(off)) c.writeUInt32LE(seq, off + 8);
      return c;
    });
}

let cpuMs = 0;

const sink = () => {
  let bytes = 0;
  return {
    write: (s: string) => ((bytes += s.length), true),
    get bytes() {
      return bytes;
    },
  };
};

async function once(
  kind: 'restore' | 'save',
  table: ReturnType<typeof buildBenchTable>,
  dump: (seq: number) => Buffer[],
  proc: string,
): Promise<number> {
  const out = sink();
  const err = sink();
  const t = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  const code = await main(kind === 'restore' ? ['-R'] : ['-Sn'], {
    ipvs: async () => new IpvsNetlink(() => new ScriptedKernel(dump), FAMILY),
    procIpVs: async () => proc,
    stdin: (async function* () {
      yield Buffer.from(table.restoreText);
    })(),
    stdout: out,
    stderr: err,
  });
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  const cpu = process.cpuUsage(cpu0);
  cpuMs = (cpu.user + cpu.system) / 1000;
  if (code !== 0) throw new Error(`${kind}: exit ${code}`);
  if (kind === 'save' && out.bytes !== table.restoreText.length)
    throw new Error(`save printed ${out.bytes} chars, want ${table.restoreText.length}`);
  return ms;
}

async function run(): Promise<void> {
  const table = buildBenchTable(services, dests);
  const entries: { vs: VirtualServerEntry['vs']; dests: VirtualServerEntry['dests'][number][] }[] = [];
  for (const op of table.ops) {
    if (op.kind === 'newService')
      entries.push({ vs: { ...op.vs, flags: 0, timeout: 0, netmask: 0xffffffff, peName: '' }, dests: [] });
    else if (op.kind === 'newDest') entries[entries.length - 1]!.dests.push(realServerOf(op.rs));
  }
  const proc = what === 'restore' ? '' : procIpVsText(entries);
  const dump = serviceDump(entries);
  for (let r = 0; r < Number(roundsArg); r++) {
    for (const kind of ['restore', 'save'] as const) {
      if (what !== 'both' && what !== kind) continue;
      console.log(
        JSON.stringify({
          kind,
          services,
          dests,
          round: r,
          ms: Math.round(await once(kind, table, dump, proc)),
          cpuMs: Math.round(cpuMs),
        }),
      );
    }
  }
}

run().catch((e) => {
  console.error(e);
  process.exit(1);
});
