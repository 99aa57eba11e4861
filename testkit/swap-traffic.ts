/**
 * Steady traffic through a node while its Service proxy is swapped (spec/vm/kube-proxy-swap,
 * kube-proxy-migration): clients making one new HTTP request every `rateMs` each, and
 * long-lived TCP connections pinging an echo server. A swap is judged on the failures and
 * broken connections since it began.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { deletePod, longClient, makePod, run, startEchoServer, tryRun } from './netns';
import { eventually } from './wait-for';

interface TrafficLoop {
  readonly child: ChildProcess;
  ok: number;
  readonly failures: string[];
}

/**
 * A client in namespace `ns` making one HTTP request to addr:port every `rateMs`, each with a
 * 3 s deadline; prints `ok N` or `fail N <reason> (sent at <ms since the epoch>)` per request.
 */
function trafficLoop(ns: string, addr: string, port: number, rateMs: number): TrafficLoop {
  const script =
    `const http=require('http');let n=0;setInterval(()=>{const i=++n;const t=Date.now();const r=http.get({host:${JSON.stringify(addr)},port:${port},agent:false,timeout:3000},(s)=>{s.resume();s.on('end',()=>console.log('ok '+i))});` +
    `r.on('timeout',()=>{r.destroy(new Error('timeout'))});r.on('error',(e)=>console.log('fail '+i+' '+e.message+' (sent at '+t+')'))},${rateMs});`;
  const child = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  const loop: TrafficLoop = { child, ok: 0, failures: [] };
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    const lines = buf.split('\n');
    buf = lines.pop()!;
    for (const l of lines) if (l.startsWith('ok ')) loop.ok++; else if (l.startsWith('fail ')) loop.failures.push(`${addr}:${port} ${l}`);
  });
  return loop;
}

export class SwapTraffic {
  private readonly loops: TrafficLoop[] = [];
  private readonly longs: ReturnType<typeof longClient>[] = [];

  constructor(readonly rateMs = 100) {}

  /** a client in `ns` requesting http://addr:port/ every rateMs */
  requests(ns: string, addr: string, port: number): this {
    this.loops.push(trafficLoop(ns, addr, port, this.rateMs));
    return this;
  }

  /** `count` long-lived connections from `ns` to an echo server at addr:port */
  connections(ns: string, addr: string, port: number, count: number): this {
    for (let i = 0; i < count; i++) this.longs.push(longClient(ns, addr, port));
    return this;
  }

  served(): number {
    return this.loops.reduce((n, l) => n + l.ok, 0);
  }

  get longCount(): number {
    return this.longs.length;
  }

  /** every failed request so far, "addr:port fail N reason" */
  failures(): string[] {
    return this.loops.flatMap((l) => l.failures);
  }

  /** what a long connection printed other than a pong (closed, error ...) */
  broken(): string[] {
    return this.longs.flatMap((c) => c.out.filter((l) => !l.startsWith('pong')));
  }

  /** The long connections all still answer and requests have gone on for `ms` more. */
  async goesOn(ms: number): Promise<void> {
    const from = this.served();
    const perTick = this.loops.length;
    await eventually('more requests served', () => this.served(), (n) => n >= from + (perTick * ms) / this.rateMs / 2, ms * 10);
    for (const c of this.longs) {
      const n = c.out.filter((l) => l.startsWith('pong')).length;
      await eventually('pongs on a long connection', () => c.out.filter((l) => l.startsWith('pong')).length, (m) => m > n);
    }
  }

  stop(): void {
    for (const l of this.loops) l.child.kill('SIGKILL');
    for (const c of this.longs) c.child.kill('SIGKILL');
  }
}

/**
 * The node the swaps run on (in the test file's network namespace): its address on a dummy
 * eth9, a backend pod with an HTTP echo server on 8080 and a TCP echo on 9000, a client pod
 * and an outside client routed through the node address.
 */
export const SWAP_NODE = {
  NODE_IP: '192.0.2.1',
  POD1: { name: 'pod1', ip: '10.244.1.2', gw: '10.244.1.1' }, // backend
  POD2: { name: 'pod2', ip: '10.244.2.2', gw: '10.244.2.1' }, // client pod
  EXT1: { name: 'ext1', ip: '192.0.2.2', gw: '192.0.2.1' }, // outside client
} as const;

const PODS = [SWAP_NODE.POD1, SWAP_NODE.POD2, SWAP_NODE.EXT1];

/** Sets SWAP_NODE up; returns the echo servers, for removeSwapNode. */
export async function makeSwapNode(): Promise<ChildProcess[]> {
  const { NODE_IP, POD1 } = SWAP_NODE;
  for (const p of PODS) makePod(p.name, p.ip, p.gw);
  run('ip', ['link', 'add', 'eth9', 'type', 'dummy']);
  run('ip', ['addr', 'add', `${NODE_IP}/32`, 'dev', 'eth9']);
  run('ip', ['link', 'set', 'eth9', 'up']);
  return [
    await startEchoServer(POD1.name, 'pod1', POD1.ip, 8080),
    spawn('ip', ['netns', 'exec', POD1.name, process.execPath, '-e', `require('net').createServer((c)=>c.pipe(c)).listen(9000,${JSON.stringify(POD1.ip)})`], { stdio: 'ignore' }),
  ];
}

export function removeSwapNode(servers: readonly ChildProcess[]): void {
  for (const c of servers) c.kill('SIGKILL');
  for (const p of PODS) deletePod(p.name);
  tryRun('ip', ['link', 'del', 'eth9']);
}

/** `ipvsadm -Sn` lines of the swaps' Services: web (NodePort) and long, served by POD1. */
export function swapTable(web: string, nodePort: number, long: string): string[] {
  const { NODE_IP, POD1 } = SWAP_NODE;
  return [
    `-A -t ${web}:80 -s rr`, `-a -t ${web}:80 -r ${POD1.ip}:8080 -m -w 1`,
    `-A -t ${NODE_IP}:${nodePort} -s rr`, `-a -t ${NODE_IP}:${nodePort} -r ${POD1.ip}:8080 -m -w 1`,
    `-A -t ${long}:9000 -s rr`, `-a -t ${long}:9000 -r ${POD1.ip}:9000 -m -w 1`,
  ];
}
