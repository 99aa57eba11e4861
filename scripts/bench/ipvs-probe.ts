// The kube-proxy bench's eye on one side's kernel: run in that side's network namespace
// (`ip netns exec NS node ipvs-probe.js POLL_MS`), it keeps a netlink socket open there and
// answers one question at a time, read from stdin:
//   wait ID ADDRESS PORT RS_ADDRESS RS_PORT TIMEOUT_MS
// polls TCP virtual server ADDRESS:PORT's real servers every POLL_MS until RS_ADDRESS:RS_PORT
// is there at a weight above 0 (a new real server, not one draining), and prints
//   {"id":ID,"seenMs":<Date.now() of the poll that saw it>,"polls":N}   or   {"id":ID,"timeout":true}
// One dest dump of one virtual server per poll: cheap beside the side it watches.
import { createInterface } from 'node:readline';
import { openIpvs } from '../../lib/kernel/ipvs/ipvs-netlink';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';

const POLL_MS = Number(process.argv[2] ?? 5);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const ipvs = await openIpvs();
  for await (const line of createInterface({ input: process.stdin })) {
    const [verb, id, address, port, rsAddress, rsPort, timeout] = line.trim().split(/\s+/);
    if (verb !== 'wait') continue;
    const vs = { af: AF_INET, protocol: IPPROTO_TCP, address: address!, port: Number(port), fwmark: 0 } as const;
    const deadline = Date.now() + Number(timeout);
    let polls = 0;
    let answer: Record<string, unknown> = { id, timeout: true };
    while (Date.now() < deadline) {
      polls++;
      // no such virtual server yet: ask again
      const dests = await ipvs.listRealServers(vs).catch(() => []);
      if (dests.some((d) => d.address === rsAddress && d.port === Number(rsPort) && d.weight > 0)) {
        answer = { id, seenMs: Date.now(), polls };
        break;
      }
      await sleep(POLL_MS);
    }
    process.stdout.write(JSON.stringify(answer) + '\n');
  }
  ipvs.close();
}

main().catch((e) => {
  console.error(`ipvs-probe: ${(e as Error).stack ?? e}`);
  process.exit(1);
});
