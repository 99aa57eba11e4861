// Test helpers for the VM: "pods" as network namespaces on veth pairs, plumbed with
// iproute2 (shell only for plumbing; the code under test is called from TypeScript).
import { spawn, spawnSync, ChildProcess } from 'node:child_process';

// generous: processes start slowly in the TCG guest; every call still ends by itself
const EXEC_TIMEOUT_MS = 60_000;

/** Runs a command (no shell), returns stdout; throws with stderr on failure. Bounded by a timeout. */
export function run(cmd: string, args: readonly string[], input?: string, timeoutMs = EXEC_TIMEOUT_MS): string {
  const r = tryRun(cmd, args, input, timeoutMs);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr}`);
  return r.stdout;
}

/** Like run, but returns the exit status (null when killed, e.g. by the timeout) and output instead of throwing. */
export function tryRun(
  cmd: string,
  args: readonly string[],
  input?: string,
  timeoutMs = EXEC_TIMEOUT_MS,
): { status: number | null; signal: string | null; stdout: string; stderr: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: timeoutMs, input, stdio: ['pipe', 'pipe', 'pipe'] });
  return {
    status: r.status,
    signal: r.signal,
    stdout: r.stdout ?? '',
    stderr: r.stderr ?? (r.error ? String(r.error) : ''),
  };
}

export const ip = (...args: string[]): string => run('ip', args);

/**
 * A pod: network namespace `name` with eth0 (podIP/24) whose peer `veth-<name>` sits in the
 * root namespace with hostIP/24 and is the pod's default gateway (routing, no bridge).
 */
export function makePod(name: string, podIP: string, hostIP: string): void {
  ip('netns', 'add', name);
  ip('link', 'add', `veth-${name}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', name);
  ip('addr', 'add', `${hostIP}/24`, 'dev', `veth-${name}`);
  ip('link', 'set', `veth-${name}`, 'up');
  ip('-n', name, 'link', 'set', 'lo', 'up');
  ip('-n', name, 'addr', 'add', `${podIP}/24`, 'dev', 'eth0');
  ip('-n', name, 'link', 'set', 'eth0', 'up');
  ip('-n', name, 'route', 'add', 'default', 'via', hostIP);
}

/**
 * Gives pod `name` (made by makePod) an IPv6 address: podIP6/64 on its eth0, hostIP6/64 on
 * `veth-<name>`, which is its default IPv6 gateway. `nodad`: duplicate address detection would
 * keep both addresses tentative (unusable) for a second or more after they are added.
 * IPv6 forwarding is the caller's (net.ipv6.conf.all.forwarding of the root namespace).
 */
export function addPodIpv6(name: string, podIP6: string, hostIP6: string): void {
  ip('addr', 'add', `${hostIP6}/64`, 'dev', `veth-${name}`, 'nodad');
  ip('-n', name, 'addr', 'add', `${podIP6}/64`, 'dev', 'eth0', 'nodad');
  ip('-n', name, '-6', 'route', 'add', 'default', 'via', hostIP6);
}

export function deletePod(name: string): void {
  tryRun('ip', ['netns', 'del', name]);
  tryRun('ip', ['link', 'del', `veth-${name}`]);
}

/** Runs argv inside namespace `ns` ('' = the root namespace). */
export function inNs(ns: string, argv: readonly string[]): { cmd: string; args: string[] } {
  return ns ? { cmd: 'ip', args: ['netns', 'exec', ns, ...argv] } : { cmd: argv[0]!, args: argv.slice(1) };
}

/**
 * An HTTP server in namespace `ns` on addr:port answering every request with
 * "<name> client=<peer address>" (the address it sees). Resolves once it listens.
 */
export async function startEchoServer(ns: string, name: string, addr: string, port: number): Promise<ChildProcess> {
  const script =
    `require('http').createServer((q,s)=>s.end(${JSON.stringify(name)}+' client='+q.socket.remoteAddress+'\\n'))` +
    `.listen(${port},${JSON.stringify(addr)},()=>console.log('ready'))`;
  const { cmd, args } = inNs(ns, [process.execPath, '-e', script]);
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`echo server ${name} did not start`)), 60_000);
    child.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`echo server ${name} exited ${code}`));
    });
  });
  return child;
}

export interface ConnectResult {
  /**
   * 'ok' with the server's reply; 'refused' when the connection failed at once (RST, or the
   * ICMP port-unreachable of iptables' default REJECT); 'timeout' when nothing came back
   * (dropped); 'error' for anything else (curl's exit code in `reply`)
   */
  readonly outcome: 'ok' | 'refused' | 'timeout' | 'error';
  readonly reply: string;
}

/** curl exit codes (man curl) */
const CURLE = { COULDNT_CONNECT: 7, OPERATION_TIMEDOUT: 28 } as const;

/**
 * One HTTP request from namespace `ns` ('' = the node) to addr:port with curl (a native
 * binary: starts fast in the TCG guest), bounded by `timeoutSec`.
 */
export function connect(ns: string, addr: string, port: number, timeoutSec = 5): ConnectResult {
  const host = addr.includes(':') ? `[${addr}]` : addr;
  const { cmd, args } = inNs(ns, ['curl', '-sS', '--max-time', String(timeoutSec), `http://${host}:${port}/`]);
  const r = tryRun(cmd, args, undefined, (timeoutSec + 60) * 1000);
  if (r.status === 0) return { outcome: 'ok', reply: r.stdout.trim() };
  if (r.status === CURLE.COULDNT_CONNECT) return { outcome: 'refused', reply: '' };
  if (r.status === CURLE.OPERATION_TIMEDOUT) return { outcome: 'timeout', reply: '' };
  return { outcome: 'error', reply: `curl exit ${r.status ?? r.signal}: ${r.stderr.trim()}` };
}

/** A TCP client in `ns` that keeps one connection open and pings every 200 ms. */
export function longClient(ns: string, addr: string, port: number): { child: ChildProcess; out: string[] } {
  const script =
    `const s=require('net').connect(${port},${JSON.stringify(addr)});let n=0;` +
    `s.on('data',()=>console.log('pong '+(++n)));s.on('close',()=>{console.log('closed');process.exit(0)});` +
    `s.on('error',(e)=>console.log('error '+e.code));setInterval(()=>s.write('ping\\n'),200);`;
  const child = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out: string[] = [];
  child.stdout!.on('data', (d: Buffer) => out.push(...d.toString().split('\n').filter(Boolean)));
  return { child, out };
}
