// The golden cases over the kernel fakes: each case's objects through the real trackers,
// planner and proxier, and the fakes' tables printed as the kernel's tools print them, against
// the files beside the case (spec/golden/README.md). GOLDEN_UPDATE=1 writes the files instead;
// spec/vm/golden.vm.test.ts holds the same files against the real kernel and the real daemon.
import yaml from 'js-yaml';
import { decodeProxyConfig } from '../../lib/config/decode-config';
import { proxierSettings } from '../../lib/daemon/daemon';
import { kubeProxyNodeIPs } from '../../lib/daemon/families';
import { nodeInfo } from '../../lib/k8s/convert';
import { formatListAll } from '../../lib/cli/ipvsadm/format-list';
import { DEFAULT_FORMAT } from '../../lib/cli/ipvsadm/command';
import { proxierOverFakes } from '../../testkit/proxier-over-fakes';
import { FakeLink } from '../../testkit/kernel/fake-link';
import {
  GOLDEN_FILES,
  GoldenFile,
  IPTABLES_TABLES,
  goldenCaseNames,
  loadGoldenCase,
  normaliseGolden,
  readGolden,
  writeGolden,
} from '../../testkit/golden';
import type { FakeIptables } from '../../testkit/kernel/fake-iptables';

const UPDATE = process.env.GOLDEN_UPDATE === '1';

async function iptablesSave(t: FakeIptables | undefined): Promise<string> {
  let out = '';
  for (const table of IPTABLES_TABLES) out += t ? await t.save(table) : '';
  return out;
}

describe.each(goldenCaseNames())('golden case %s, over the kernel fakes', (name) => {
  it('programs the tables its files hold', async () => {
    const c = loadGoldenCase(name);
    const { config, warnings } = decodeProxyConfig(yaml.dump(c.config), `${name}/objects.yaml`);
    expect(warnings).toEqual([]);
    const info = nodeInfo(c.node);
    expect(info.refusals).toEqual([]);
    expect(info.name).toBe(config.hostnameOverride);
    // the node's eth0 holds the Node's InternalIP addresses, as the VM test's namespace does
    const link = new FakeLink();
    await link.addDummy('eth0');
    const eth0 = (await link.getLink('eth0')).index;
    for (const a of c.node.status?.addresses ?? []) if (a.type === 'InternalIP') await link.addAddress(eth0, a.address);
    // the daemon on a kernel with both families (the VM's) proxies both, IPv4 first, and its
    // iptables has MASQUERADE --random-fully
    const p = await proxierOverFakes({
      settings: proxierSettings(config, ['ipv4', 'ipv6']),
      node: {
        name: info.name,
        zone: info.zone,
        nodeIPs: kubeProxyNodeIPs(config.bindAddress, info.nodeIPs),
        podCIDRs: info.podCIDRs,
      },
      randomFully: { ipv4: true, ipv6: true },
      link,
    });
    p.add(...c.services, ...c.slices);
    await p.start();
    expect(p.events).toEqual([]);

    const printed: Record<GoldenFile, string> = {
      'ipvsadm-Sn.txt': formatListAll(await p.ipvs.info(), await p.ipvs.listAll(), {
        ...DEFAULT_FORMAT,
        rule: true,
        numeric: true,
      }),
      'ipset-save.txt': await p.ipset.save(),
      'iptables-save.txt': await iptablesSave(p.iptablesByFamily.ipv4),
      'ip6tables-save.txt': await iptablesSave(p.iptablesByFamily.ipv6),
    };
    const files = Object.keys(GOLDEN_FILES) as GoldenFile[];
    const actual = Object.fromEntries(files.map((f) => [f, normaliseGolden(f, printed[f])]));
    if (UPDATE) for (const f of files) writeGolden(c, f, actual[f]!);
    expect(actual).toEqual(Object.fromEntries(files.map((f) => [f, readGolden(c, f)])));
  });
});
