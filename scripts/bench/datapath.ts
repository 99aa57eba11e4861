// The kube-proxy bench's datapath row (kube-proxy-peer.ts, after a side's other phases, its
// Services still programmed): new TCP connections per second through one ClusterIP and their
// connect latency, the same client program (datapath-client.ts) for every side. Around the
// side's node namespace: one pod namespace per endpoint of the Service (its address on eth0, a
// veth to the node namespace, a /32 route to it there, a Node echo server on :8080 in it), and a
// client namespace (10.244.250.2, inside the clusterCIDR: no side masquerades it) routed through
// the node namespace, which forwards (net.ipv4.ip_forward=1, as on any node). So each connection
// crosses the side's datapath as a pod-to-Service connection from another pod on the node does:
// the client's SYN enters the node namespace, the side's rules (IPVS, or nftables' DNAT) send it
// to a pod, and the answer comes back through the same NAT. Everything runs on the guest's CPUs
// beside the side (the client, the echo servers, the kernel's forwarding): in the TCG guest the
// figures are bounded by emulated CPU, not by the datapath alone.
import { ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { run, tryRun } from '../../testkit/netns';
import type { DatapathSummary } from './datapath-stats';

const CLIENT_NS = 'dp-client';
const podNs = (k: number) => `dp-pod-${k}`;

function echoServer(ns: string, port: number): Promise<ChildProcess> {
  const script =
    `require('net').createServer((s)=>{s.on('error',()=>{});s.pipe(s)})` +
    `.listen(${port},'0.0.0.0',()=>console.log('ready'))`;
  const child = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`echo server in ${ns} did not start`)), 120_000);
    child.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`echo server in ${ns} exited ${code}`));
    });
  });
}

function teardown(pods: number, servers: readonly ChildProcess[]): void {
  for (const s of servers) s.kill('SIGKILL');
  for (let k = 0; k < pods; k++) tryRun('ip', ['netns', 'del', podNs(k)]);
  tryRun('ip', ['netns', 'del', CLIENT_NS]);
}

export interface DatapathRun extends DatapathSummary {
  readonly concurrency: number;
  readonly errorCodes: Record<string, number>;
}

/**
 * Pods at `endpoints` (port `targetPort`) and the client around node namespace `ns`; the client
 * runs against `vip`:`port` for `seconds` (after `warmupSeconds`) with `concurrency` loops.
 */
export async function runDatapath(o: {
  ns: string;
  vip: string;
  port: number;
  endpoints: readonly string[];
  targetPort: number;
  seconds: number;
  warmupSeconds: number;
  concurrency: number;
}): Promise<DatapathRun> {
  const servers: ChildProcess[] = [];
  const node = (...args: string[]) => run('ip', ['-n', o.ns, ...args]);
  teardown(o.endpoints.length, []);
  try {
    run('ip', ['netns', 'exec', o.ns, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    o.endpoints.forEach((ep, k) => {
      const pod = podNs(k);
      const p = (...args: string[]) => run('ip', ['-n', pod, ...args]);
      run('ip', ['netns', 'add', pod]);
      node('link', 'add', `dpv${k}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', pod);
      node('addr', 'add', `172.31.${k}.1/30`, 'dev', `dpv${k}`);
      node('link', 'set', `dpv${k}`, 'up');
      node('route', 'add', `${ep}/32`, 'dev', `dpv${k}`);
      p('link', 'set', 'lo', 'up');
      p('addr', 'add', `${ep}/32`, 'dev', 'eth0');
      p('addr', 'add', `172.31.${k}.2/30`, 'dev', 'eth0');
      p('link', 'set', 'eth0', 'up');
      p('route', 'add', 'default', 'via', `172.31.${k}.1`);
    });
    run('ip', ['netns', 'add', CLIENT_NS]);
    node('link', 'add', 'dpc', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', CLIENT_NS);
    node('addr', 'add', '10.244.250.1/30', 'dev', 'dpc');
    node('link', 'set', 'dpc', 'up');
    const c = (...args: string[]) => run('ip', ['-n', CLIENT_NS, ...args]);
    c('link', 'set', 'lo', 'up');
    c('addr', 'add', '10.244.250.2/30', 'dev', 'eth0');
    c('link', 'set', 'eth0', 'up');
    c('route', 'add', 'default', 'via', '10.244.250.1');
    for (let k = 0; k < o.endpoints.length; k++) servers.push(await echoServer(podNs(k), o.targetPort));
    const out = run(
      'ip',
      [
        'netns',
        'exec',
        CLIENT_NS,
        process.execPath,
        path.join(__dirname, 'datapath-client.js'),
        o.vip,
        String(o.port),
        String(o.seconds),
        String(o.concurrency),
        String(o.warmupSeconds),
      ],
      undefined,
      (o.seconds + o.warmupSeconds + 300) * 1000,
    );
    const last = out.trim().split('\n').pop()!;
    return JSON.parse(last) as DatapathRun;
  } finally {
    teardown(o.endpoints.length, servers);
  }
}
