/**
 * A step file (testkit/steps.ts) over the kernel twins: the real trackers, planner and proxier
 * over the fakes (proxierOverFakes), the objects handed over as the informers hand them, and
 * after each step the fakes' tables printed as the kernel's tools print them. A restart stops
 * the proxier and builds a new one over the same fakes, as a restarted daemon finds the kernel.
 */
import yaml from 'js-yaml';
import winston from 'winston';
import type { V1EndpointSlice, V1Node, V1Service } from '@kubernetes/client-node';
import { decodeProxyConfig } from '../lib/config/decode-config';
import { ProxyConfig } from '../lib/config/proxy-config';
import { proxierSettings } from '../lib/daemon/daemon';
import { kubeProxyNodeIPs } from '../lib/daemon/families';
import { nodeInfo } from '../lib/k8s/convert';
import { formatListAll } from '../lib/cli/ipvsadm/format-list';
import { DEFAULT_FORMAT } from '../lib/cli/ipvsadm/command';
import { main as ipvsadm } from '../lib/cli/ipvsadm/ipvsadm';
import { formatServiceList } from '../lib/cli/views/format-service-list';
import { NodeState } from '../lib/proxier/types';
import { IpFamily } from '../lib/model/ip-family';
import { FakeIpvs } from './kernel/fake-ipvs';
import { FakeLink } from './kernel/fake-link';
import { FakeIpset } from './kernel/fake-ipset';
import { FakeIptables } from './kernel/fake-iptables';
import { proxierOverFakes } from './proxier-over-fakes';
import { IPTABLES_TABLES, formatDummyAddresses, normaliseOutput } from './golden';
import { OUTPUTS, StepCase, StepObject, StepOutputs, objectKey } from './steps';

type Proxier = Awaited<ReturnType<typeof proxierOverFakes>>;

/** What a case's run over the twins printed per step, and the proxier's Events and config warnings. */
export interface TwinRun {
  readonly outputs: StepOutputs[];
  readonly events: string[];
  readonly warnings: string[];
}

/** The proxier's node state from a Node, as the daemon's informer wiring makes it. */
function nodeState(config: ProxyConfig, node: V1Node): NodeState {
  const info = nodeInfo(node);
  return {
    name: info.name,
    zone: info.zone,
    nodeIPs: kubeProxyNodeIPs(config.bindAddress, info.nodeIPs),
    podCIDRs: info.podCIDRs,
  };
}

/** The node's kernel, kept across restarts: eth0 holds the Node's InternalIP addresses, as the VM's namespace does. */
class TwinKernel {
  readonly ipvs = new FakeIpvs();
  readonly link = new FakeLink();
  readonly ipset = new FakeIpset({ log: winston.createLogger({ silent: true }) });
  iptables: Partial<Record<IpFamily, FakeIptables>> = {};

  async addEth0(node: V1Node): Promise<void> {
    await this.link.addDummy('eth0');
    const eth0 = (await this.link.getLink('eth0')).index;
    for (const a of node.status?.addresses ?? [])
      if (a.type === 'InternalIP') await this.link.addAddress(eth0, a.address);
  }

  /** Another program's command: `ipvsadm ARGS` (kube-ipvs' ipvsadm over the twin) or `ipset ARGS` (one restore line). */
  async foreign(command: string): Promise<void> {
    const [tool, ...args] = command.trim().split(/\s+/);
    if (tool === 'ipvsadm') {
      let err = '';
      const status = await ipvsadm(args, {
        ipvs: this.ipvs,
        stdout: { write: () => true },
        stderr: { write: (t: string) => (err += t) },
        stdin: (async function* () {})(),
      });
      if (status !== 0) throw new Error(`${command}: exit ${status}: ${err}`);
    } else if (tool === 'ipset') {
      await this.ipset.restore(`${args.join(' ')}\n`);
    } else throw new Error(`${command}: a step's kernel commands are ipvsadm or ipset`);
  }

  async print(p: Proxier): Promise<StepOutputs> {
    const save = async (t: FakeIptables | undefined) => {
      let out = '';
      for (const table of IPTABLES_TABLES) out += t ? await t.save(table) : '';
      return out;
    };
    const dummy = (await this.link.listLinks()).find((l) => l.name === 'kube-ipvs0');
    const addresses = dummy
      ? [...(await this.link.listAddresses('ipv4')), ...(await this.link.listAddresses('ipv6'))]
          .filter((a) => a.ifindex === dummy.index)
          .map((a) => `${a.address}/${a.prefixLen}`)
      : null;
    const printed: StepOutputs = {
      'ipvsadm -Sn': formatListAll(await this.ipvs.info(), await this.ipvs.listAll(), {
        ...DEFAULT_FORMAT,
        rule: true,
        numeric: true,
      }),
      'ipset save': await this.ipset.save(),
      'iptables-save': await save(this.iptables.ipv4),
      'ip6tables-save': await save(this.iptables.ipv6),
      'kube-ipvs0': formatDummyAddresses(addresses),
      'kube-ipvs service list': formatServiceList({
        source: 'daemon',
        frontends: p.proxier.serviceList(),
        refused: p.proxier.refusedFrontends(),
      }),
    };
    return Object.fromEntries(OUTPUTS.map((o) => [o, normaliseOutput(o, printed[o])])) as StepOutputs;
  }
}

/** Hands an object over as an informer would: an add, or an update from the object it replaces. */
function handOver(p: Proxier, config: ProxyConfig, old: StepObject | undefined, o: StepObject): void {
  if (o.kind === 'Node') p.proxier.onNodeChange(nodeState(config, o as V1Node));
  else if (o.kind === 'Service')
    old ? p.proxier.onServiceUpdate(old as V1Service, o as V1Service) : p.proxier.onServiceAdd(o as V1Service);
  else if (old) p.replaceSlice(old as V1EndpointSlice, o as V1EndpointSlice);
  else p.add(o as V1EndpointSlice);
}

/**
 * Lets the proxier run what the step asked for: its syncs and the retries they schedule, a
 * second at a time while syncs still happen (short of the drain check's 15 s: a real server
 * set to weight 0 is still draining when the step is printed, as the VM reads it).
 */
async function settle(p: Proxier): Promise<void> {
  await p.settle(0);
  for (let i = 0; i < 5; i++) {
    const before = p.results.length;
    await p.settle(1_000);
    if (p.results.length === before) return;
  }
}

/** Runs every step of `c` over the twins. */
export async function runOverTwins(c: StepCase): Promise<TwinRun> {
  const { config, warnings } = decodeProxyConfig(yaml.dump(c.config), `${c.name}.yaml`);
  const kernel = new TwinKernel();
  await kernel.addEth0(c.node);
  const objects = new Map<string, StepObject>([[objectKey(c.node as StepObject), c.node as StepObject]]);
  const outputs: StepOutputs[] = [];
  const events: string[] = [];
  let p: Proxier | undefined;
  const start = async (): Promise<Proxier> => {
    const node = [...objects.values()].find((o) => o.kind === 'Node') as V1Node;
    const started = await proxierOverFakes({
      // the daemon on a kernel with both families (the VM's) proxies both, IPv4 first, and its
      // iptables has MASQUERADE --random-fully
      settings: proxierSettings(config, ['ipv4', 'ipv6']),
      node: nodeState(config, node),
      randomFully: { ipv4: true, ipv6: true },
      ipvs: kernel.ipvs,
      link: kernel.link,
      ipset: kernel.ipset,
      iptables: kernel.iptables,
    });
    kernel.iptables = started.iptablesByFamily;
    started.add(...([...objects.values()].filter((o) => o.kind !== 'Node') as (V1Service | V1EndpointSlice)[]));
    await started.start();
    return started;
  };
  for (const step of c.steps) {
    if (step.restart && p) {
      p.proxier.stop();
      events.push(...p.events);
      p = undefined;
    }
    for (const command of step.kernel) await kernel.foreign(command);
    for (const o of step.apply) {
      const key = objectKey(o);
      const old = objects.get(key);
      objects.set(key, o);
      if (p) handOver(p, config, old, o);
    }
    for (const ref of step.delete) {
      const key = objectKey(ref);
      const old = objects.get(key);
      if (!old) throw new Error(`${c.name}: ${step.title} deletes ${key}, which is not there`);
      objects.delete(key);
      if (p && old.kind !== 'Node') p.remove(old as V1Service | V1EndpointSlice);
    }
    p ??= await start();
    await settle(p);
    outputs.push(await kernel.print(p));
  }
  p?.proxier.stop();
  events.push(...(p?.events ?? []));
  return { outputs, events, warnings: warnings.map((w) => JSON.stringify(w)) };
}
