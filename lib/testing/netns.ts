// Test helpers for the VM: "pods" as network namespaces on veth pairs, plumbed with
// iproute2 (shell only for plumbing; the code under test is called from TypeScript).
import { spawn, spawnSync, ChildProcess } from 'node:child_process';

const EXEC_TIMEOUT_MS = 20_000;

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
  return { status: r.status, signal: r.signal, stdout: r.stdout ?? '', stderr: r.stderr ?? (r.error ? String(r.error) : '') };
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

export function deletePod(name: string): void {
  tryRun('ip', ['netns', 'del', name]);
  tryRun('ip', ['link', 'del', `veth-${name}`]);
}

/** Runs argv inside namespace `ns` ('' = the root namespace). */
export function inNs(ns: string, argv: readonly string[]): { cmd: string; args: string[] } {
  return ns ? { cmd: 'ip', args: ['netns', 'exec', ns, ...argv] } : { cmd: argv[0]!, args: argv.slice(1) };
}

/**
 * A TCP echo server in namespace `ns` on addr:port: answers every connection with
 * "<name> client=<peer address>\n" and closes. Resolves once it accepts connections.
 */
export async function startEchoServer(ns: string, name: string, addr: string, port: number): Promise<ChildProcess> {
  const script =
    `require('net').createServer(s=>{s.end(${JSON.stringify(name)}+' client='+s.remoteAddress+'\\n')})` +
    `.listen(${port},${JSON.stringify(addr)},()=>console.log('ready'))`;
  const { cmd, args } = inNs(ns, [process.execPath, '-e', script]);
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`echo server ${name} did not start`)), 30_000);
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
  /** 'ok' with the server's reply; 'refused' (RST: REJECT --reject-with tcp-reset or nobody listening);
   * 'unreachable' (ICMP unreachable: iptables REJECT's default); 'timeout' (dropped) */
  readonly outcome: 'ok' | 'refused' | 'unreachable' | 'timeout' | 'error';
  readonly reply: string;
}

/**
 * One TCP connection from namespace `ns` to addr:port, reading the reply; bounded by
 * `timeoutSec`. Uses python3 so the outcome is the errno, not a message.
 */
export function connect(ns: string, addr: string, port: number, timeoutSec = 3): ConnectResult {
  const py = [
    'import socket,sys,errno',
    `s=socket.socket(socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET)`,
    `s.settimeout(${timeoutSec})`,
    'try:',
    '  s.connect((sys.argv[1],int(sys.argv[2])))',
    '  d=b""',
    '  while True:',
    '    c=s.recv(4096)',
    '    if not c: break',
    '    d+=c',
    '  print("ok "+d.decode().strip())',
    'except socket.timeout: print("timeout")',
    'except ConnectionRefusedError: print("refused")',
    'except OSError as e:',
    '  print("unreachable" if e.errno in (errno.EHOSTUNREACH,errno.ENETUNREACH) else "error "+str(e.errno))',
  ].join('\n');
  const { cmd, args } = inNs(ns, ['python3', '-c', py, addr, String(port)]);
  const out = run(cmd, args).trim();
  const [outcome, ...rest] = out.split(' ');
  return { outcome: outcome as ConnectResult['outcome'], reply: rest.join(' ') };
}
