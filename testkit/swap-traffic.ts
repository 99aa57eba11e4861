/**
 * Steady traffic through a node while its Service proxy is swapped (spec/vm/kube-proxy-swap,
 * kube-proxy-migration): new HTTP requests at a fixed rate to each target, long-lived TCP
 * connections pinging an echo server, UDP flows. A swap is judged on the failed requests and
 * broken connections or flows since it began. One client process per network namespace runs
 * all of that namespace's traffic (a process per target costs the TCG guest more CPU than the
 * traffic itself).
 */
import { ChildProcess, spawn } from 'node:child_process';
import { deletePod, makePod, run, startEchoServer, tryRun } from './netns';
import { eventually } from './wait-for';
import type { LabClient } from './lab-client';
import { labNode, labService, labSlice } from './lab-objects';

export type Target =
  { kind: 'requests' | 'udp'; addr: string; port: number } | { kind: 'tcp'; addr: string; port: number; count: number };

/**
 * The client script of one namespace. Per target i: `ok i N`, or `fail i N <reason> (sent at
 * <ms since the epoch>)`, per request (3 s deadline each); `pong i.k N` per echo on long
 * connection k (or the UDP flow, k 0); `broken i.k <closed|error CODE>` when one ends.
 */
export function clientScript(targets: readonly Target[], rateMs: number, pingMs: number): string {
  return `
const http=require('http'),net=require('net'),dgram=require('dgram');
const T=${JSON.stringify(targets)};
T.forEach((t,i)=>{
  if(t.kind==='requests'){let n=0;setInterval(()=>{const k=++n,at=Date.now();
    const r=http.get({host:t.addr,port:t.port,agent:false,timeout:3000},(s)=>{s.resume();s.on('end',()=>console.log('ok '+i+' '+k))});
    r.on('timeout',()=>r.destroy(new Error('timeout')));r.on('error',(e)=>console.log('fail '+i+' '+k+' '+e.message+' (sent at '+at+')'));},${rateMs});}
  if(t.kind==='udp'){const s=dgram.createSocket('udp4');let n=0;s.on('message',()=>console.log('pong '+i+'.0 '+(++n)));
    s.on('error',(e)=>console.log('broken '+i+'.0 error '+e.code));setInterval(()=>s.send('ping',t.port,t.addr),${rateMs});}
  if(t.kind==='tcp')for(let c=0;c<t.count;c++){const s=net.connect(t.port,t.addr);let n=0;
    s.on('data',()=>console.log('pong '+i+'.'+c+' '+(++n)));s.on('close',()=>console.log('broken '+i+'.'+c+' closed'));
    s.on('error',(e)=>console.log('broken '+i+'.'+c+' error '+e.code));setInterval(()=>s.write('ping\\n'),${pingMs});}
});`;
}

interface Client {
  readonly ns: string;
  readonly targets: Target[];
  child?: ChildProcess;
}

export class SwapTraffic {
  private readonly clients = new Map<string, Client>();
  private okCount = 0;
  private readonly failed: string[] = [];
  private readonly brokenLines: string[] = [];
  /** pongs per long connection or flow ("ns i.k") */
  private readonly pongs = new Map<string, number>();

  /** `rateMs`: between requests to one target, and between UDP datagrams; `pingMs`: on a long connection */
  constructor(
    readonly rateMs = 100,
    readonly pingMs = 500,
  ) {}

  private add(ns: string, t: Target): this {
    const c = this.clients.get(ns) ?? { ns, targets: [] };
    c.targets.push(t);
    this.clients.set(ns, c);
    return this;
  }

  /** new HTTP requests from `ns` to http://addr:port/, one every rateMs */
  requests(ns: string, addr: string, port: number): this {
    return this.add(ns, { kind: 'requests', addr, port });
  }

  /** one UDP flow from `ns` to a UDP echo: one socket (one source port: one conntrack entry, one IPVS connection) */
  udpFlow(ns: string, addr: string, port: number): this {
    return this.add(ns, { kind: 'udp', addr, port });
  }

  /** `count` long-lived TCP connections from `ns` to an echo server at addr:port */
  connections(ns: string, addr: string, port: number, count: number): this {
    return this.add(ns, { kind: 'tcp', addr, port, count });
  }

  /** Starts every client (once). */
  start(): this {
    for (const c of this.clients.values()) {
      if (c.child) continue;
      const child = spawn(
        'ip',
        ['netns', 'exec', c.ns, process.execPath, '-e', clientScript(c.targets, this.rateMs, this.pingMs)],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      c.child = child;
      for (const [i, t] of c.targets.entries()) {
        if (t.kind === 'udp') this.pongs.set(`${c.ns} ${i}.0`, 0);
        if (t.kind === 'tcp') for (let k = 0; k < t.count; k++) this.pongs.set(`${c.ns} ${i}.${k}`, 0);
      }
      let buf = '';
      child.stdout!.on('data', (d: Buffer) => {
        buf += d.toString();
        const lines = buf.split('\n');
        buf = lines.pop()!;
        for (const l of lines) this.line(c, l);
      });
    }
    return this;
  }

  private line(c: Client, l: string): void {
    const [kind, id, ...rest] = l.split(' ');
    const t = c.targets[Number(id?.split('.')[0])];
    const what = t ? `${c.ns} -> ${t.addr}:${t.port}` : c.ns;
    if (kind === 'ok') this.okCount++;
    else if (kind === 'fail') this.failed.push(`${what} fail ${rest.join(' ')}`);
    else if (kind === 'pong') this.pongs.set(`${c.ns} ${id}`, (this.pongs.get(`${c.ns} ${id}`) ?? 0) + 1);
    else if (kind === 'broken') this.brokenLines.push(`${what} #${id} ${rest.join(' ')}`);
  }

  served(): number {
    return this.okCount;
  }

  /** long-lived TCP connections and UDP flows */
  get longCount(): number {
    return this.pongs.size;
  }

  /** every failed request so far, "ns -> addr:port fail N reason (sent at T)" */
  failures(): string[] {
    return [...this.failed];
  }

  /** long connections or flows that ended ("ns -> addr:port #i.k closed") */
  broken(): string[] {
    return [...this.brokenLines];
  }

  /** Every long connection and flow still answers, and requests have gone on for `ms` more. */
  async goesOn(ms: number): Promise<void> {
    const from = this.served();
    const targets = [...this.clients.values()].reduce(
      (n, c) => n + c.targets.filter((t) => t.kind === 'requests').length,
      0,
    );
    await eventually(
      'more requests served',
      () => this.served(),
      (n) => n >= from + (targets * ms) / this.rateMs / 2,
      ms * 10,
    );
    const before = new Map(this.pongs);
    await eventually(
      'an echo on every long connection and flow',
      () => [...this.pongs].filter(([k, n]) => n <= before.get(k)!).map(([k]) => k),
      (quiet) => quiet.length === 0,
    );
  }

  stop(): void {
    for (const c of this.clients.values()) c.child?.kill('SIGKILL');
  }
}

/**
 * The node the swaps run on (in the test file's network namespace): its address on a dummy
 * eth9, a backend pod with an HTTP echo server on 8080, a TCP echo on 9000 and a UDP echo on
 * 5353, a client pod and an outside client routed through the node address.
 */
export const SWAP_NODE = {
  NODE_IP: '192.0.2.1',
  POD1: { name: 'pod1', ip: '10.244.1.2', gw: '10.244.1.1' }, // backend
  POD2: { name: 'pod2', ip: '10.244.2.2', gw: '10.244.2.1' }, // client pod
  EXT1: { name: 'ext1', ip: '192.0.2.2', gw: '192.0.2.1' }, // outside client, inside the LB's source ranges
  /** the load balancer's VIP (status.loadBalancer.ingress) */
  LB_IP: '203.0.113.10',
  /** the externalIP */
  EXTERNAL_IP: '198.51.100.10',
} as const;

const PODS = [SWAP_NODE.POD1, SWAP_NODE.POD2, SWAP_NODE.EXT1];

/** Sets SWAP_NODE up; returns the echo servers, for removeSwapNode. */
export async function makeSwapNode(): Promise<ChildProcess[]> {
  const { NODE_IP, POD1 } = SWAP_NODE;
  for (const p of PODS) makePod(p.name, p.ip, p.gw);
  run('ip', ['link', 'add', 'eth9', 'type', 'dummy']);
  run('ip', ['addr', 'add', `${NODE_IP}/32`, 'dev', 'eth9']);
  run('ip', ['link', 'set', 'eth9', 'up']);
  const inPod1 = (script: string) =>
    spawn('ip', ['netns', 'exec', POD1.name, process.execPath, '-e', script], { stdio: 'ignore' });
  return [
    await startEchoServer(POD1.name, 'pod1', POD1.ip, 8080),
    inPod1(`require('net').createServer((c)=>c.pipe(c)).listen(9000,${JSON.stringify(POD1.ip)})`),
    inPod1(
      `const s=require('dgram').createSocket('udp4');s.on('message',(m,r)=>s.send(m,r.port,r.address));s.bind(5353,${JSON.stringify(POD1.ip)})`,
    ),
  ];
}

export function removeSwapNode(servers: readonly ChildProcess[]): void {
  for (const c of servers) c.kill('SIGKILL');
  for (const p of PODS) deletePod(p.name);
  tryRun('ip', ['link', 'del', 'eth9']);
}

type Obj = Record<string, unknown>;

/**
 * The swaps' Services (selectorless; `slice(service, port, portName, protocol)` makes each one's
 * EndpointSlice on POD1): web (NodePort), long (TCP 9000), lb (LoadBalancer, source ranges the
 * outside client is in, no NodePort), ext (an externalIP), dns (UDP 53 -> 5353).
 */
export function swapServices(
  service: (name: string, spec: Obj) => Obj,
  slice: (svc: string, port: number, portName: string, protocol: string) => Obj,
): Obj[] {
  const { EXTERNAL_IP } = SWAP_NODE;
  return [
    service('web', { type: 'NodePort' }),
    service('long', { ports: [{ name: 'tcp', port: 9000, targetPort: 9000, protocol: 'TCP' }] }),
    service('lb', {
      type: 'LoadBalancer',
      loadBalancerSourceRanges: ['192.0.2.0/24'],
      allocateLoadBalancerNodePorts: false,
    }),
    service('ext', { externalIPs: [EXTERNAL_IP] }),
    service('dns', { ports: [{ name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP' }] }),
    slice('web', 8080, 'http', 'TCP'),
    slice('long', 9000, 'tcp', 'TCP'),
    slice('lb', 8080, 'http', 'TCP'),
    slice('ext', 8080, 'http', 'TCP'),
    slice('dns', 5353, 'dns', 'UDP'),
  ];
}

/** What the API server allocated for swapServices. */
export interface SwapAddresses {
  readonly web: string;
  readonly nodePort: number;
  readonly long: string;
  readonly dns: string;
}

/**
 * Reads what the API server allocated (`get(name)`: the Service's JSON) and gives lb its
 * VIP as a cloud controller would (`setStatus(name, status)`).
 */
export async function swapAddresses(
  get: (name: string) => Promise<{ spec: { clusterIP: string; ports: { nodePort?: number }[] } }>,
  setStatus: (name: string, status: Obj) => Promise<void>,
): Promise<SwapAddresses> {
  await setStatus('lb', { loadBalancer: { ingress: [{ ip: SWAP_NODE.LB_IP, ipMode: 'VIP' }] } });
  const web = await get('web');
  return {
    web: web.spec.clusterIP,
    nodePort: web.spec.ports[0]!.nodePort!,
    long: (await get('long')).spec.clusterIP,
    dns: (await get('dns')).spec.clusterIP,
  };
}

/**
 * The swap node's objects in the lab: namespace `ns`, Node `node`, swapServices (each with its
 * one endpoint on POD1, labelled `labels`) and `extra`; lb gets its VIP. Their addresses.
 */
export async function applySwapObjects(
  lab: LabClient,
  ns: string,
  node: string,
  labels: Record<string, string>,
  extra: readonly Obj[] = [],
): Promise<SwapAddresses> {
  await lab.apply([
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
    labNode(node, [SWAP_NODE.NODE_IP]),
    ...swapServices(
      (name, spec) => labService(ns, name, spec, { labels }),
      (svc, port, portName, protocol) =>
        labSlice(ns, svc, `${svc}-1`, [{ ip: SWAP_NODE.POD1.ip, node }], { port, portName, protocol, labels }),
    ),
    ...extra,
  ]);
  return swapAddresses(
    (name) => lab.getJson(['service', name, '-n', ns]),
    async (name, status) =>
      void (await lab.kubectl([
        'patch',
        'service',
        name,
        '-n',
        ns,
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status }),
      ])),
  );
}

/** Removes what applySwapObjects put in the lab: the Services and slices labelled `labels`, and the Node. */
export async function removeSwapObjects(
  lab: LabClient,
  ns: string,
  node: string,
  labels: Record<string, string>,
): Promise<void> {
  const selector = Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  await lab.kubectl(['delete', 'services,endpointslices', '-n', ns, '-l', selector, '--wait=false'], undefined, true);
  await lab.kubectl(['delete', 'node', node, '--wait=false'], undefined, true);
}

/** `ipvsadm -Sn` lines of swapServices, all served by POD1. */
export function swapTable(a: SwapAddresses): string[] {
  const { NODE_IP, POD1, LB_IP, EXTERNAL_IP } = SWAP_NODE;
  const vs = (proto: 't' | 'u', vip: string, rport: number) => [
    `-A -${proto} ${vip} -s rr`,
    `-a -${proto} ${vip} -r ${POD1.ip}:${rport} -m -w 1`,
  ];
  return [
    ...vs('t', `${a.web}:80`, 8080),
    ...vs('t', `${NODE_IP}:${a.nodePort}`, 8080),
    ...vs('t', `${a.long}:9000`, 9000),
    ...vs('t', `${LB_IP}:80`, 8080),
    ...vs('t', `${EXTERNAL_IP}:80`, 8080),
    ...vs('u', `${a.dns}:53`, 5353),
  ];
}

/** The lines of `ipvsadm -Sn` that are swapTable's (by their virtual addresses), sorted. */
export function swapTableLines(ipvsadmSn: string, a: SwapAddresses, extra: readonly string[] = []): string[] {
  const { NODE_IP, LB_IP, EXTERNAL_IP } = SWAP_NODE;
  const keys = [
    `${a.web}:`,
    `${a.long}:`,
    `${a.dns}:`,
    `${LB_IP}:`,
    `${EXTERNAL_IP}:`,
    `${NODE_IP}:${a.nodePort} `,
    ...extra,
  ];
  return ipvsadmSn
    .split('\n')
    .filter((l) => keys.some((k) => l.includes(k)))
    .sort();
}

/**
 * The swaps' traffic, 50 new connections a second in all: from the client pod to web's
 * ClusterIP and to the externalIP; from outside to the NodePort, the load balancer's VIP and
 * the externalIP; 10 long-lived TCP connections to long, a UDP flow to dns.
 */
export function startSwapTraffic(t: SwapTraffic, a: SwapAddresses): void {
  const { NODE_IP, POD2, EXT1, LB_IP, EXTERNAL_IP } = SWAP_NODE;
  t.requests(POD2.name, a.web, 80)
    .requests(POD2.name, EXTERNAL_IP, 80)
    .requests(EXT1.name, NODE_IP, a.nodePort)
    .requests(EXT1.name, LB_IP, 80)
    .requests(EXT1.name, EXTERNAL_IP, 80)
    .connections(POD2.name, a.long, 9000, 10)
    .udpFlow(POD2.name, a.dns, 53)
    .start();
}
