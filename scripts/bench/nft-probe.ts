// The kube-proxy bench's eye on a kube-proxy in nftables mode: ipvs-probe.ts's protocol, run in
// the side's network namespace (`ip netns exec NS node nft-probe.js POLL_MS`), one question at a
// time from stdin:
//   wait ID ADDRESS PORT RS_ADDRESS RS_PORT TIMEOUT_MS
// polls until TCP ADDRESS:PORT's service chain (found in table ip kube-proxy's service-ips map)
// sends to endpoint RS_ADDRESS:RS_PORT (named in the chain: v1.37's inline endpoint map; nft-text.ts),
// and prints {"id":ID,"seenMs":<Date.now() of the poll that saw it>,"polls":N} or
// {"id":ID,"timeout":true}. Each poll is an exec of nft (`nft list chain`, one chain): in the TCG
// guest an exec costs tens of ms, so that, not POLL_MS, is its resolution ("pollMs" says how
// long a poll took on average).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { namesEndpoint, serviceChainOf } from './nft-text';

const POLL_MS = Number(process.argv[2] ?? 5);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** nft's stdout; '' when it fails (no table or chain yet). */
function nft(args: readonly string[]): Promise<string> {
  return new Promise((resolve) => {
    const c = spawn('nft', args, { stdio: ['ignore', 'pipe', 'ignore'] });
    const out: Buffer[] = [];
    c.stdout.on('data', (d: Buffer) => out.push(d));
    c.on('error', () => resolve(''));
    c.on('close', (code) => resolve(code === 0 ? Buffer.concat(out).toString() : ''));
  });
}

async function main(): Promise<void> {
  // a Service's chain keeps its name (a hash of its port's name): looked up once per ClusterIP
  const chains = new Map<string, string>();
  for await (const line of createInterface({ input: process.stdin })) {
    const [verb, id, address, port, rsAddress, rsPort, timeout] = line.trim().split(/\s+/);
    if (verb !== 'wait') continue;
    const key = `${address}:${port}`;
    const deadline = Date.now() + Number(timeout);
    let polls = 0;
    const t0 = Date.now();
    let answer: Record<string, unknown> = { id, timeout: true };
    while (Date.now() < deadline) {
      polls++;
      let chain = chains.get(key);
      if (!chain) {
        chain = serviceChainOf(await nft(['list', 'map', 'ip', 'kube-proxy', 'service-ips']), address!, Number(port));
        if (chain) chains.set(key, chain);
      }
      const text = chain ? await nft(['list', 'chain', 'ip', 'kube-proxy', chain]) : '';
      if (namesEndpoint(text, rsAddress!, Number(rsPort))) {
        answer = { id, seenMs: Date.now(), polls, pollMs: (Date.now() - t0) / polls };
        break;
      }
      await sleep(POLL_MS);
    }
    process.stdout.write(JSON.stringify(answer) + '\n');
  }
}

main().catch((e) => {
  console.error(`nft-probe: ${(e as Error).stack ?? e}`);
  process.exit(1);
});
