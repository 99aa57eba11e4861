import { FamilyCheck, FamilySupport } from '../../lib/kernel/family-support';
import { IpFamily } from '../../lib/model/ip-family';
import {
  FamilySupportError,
  checkPrimaryFamily,
  chooseFamilies,
  kubeProxyNodeIPs,
  primaryFamily,
} from '../../lib/daemon/families';
import { proxierSettings } from '../../lib/daemon/daemon';
import { decodeProxyConfig } from '../../lib/config/decode-config';

const yes: FamilyCheck = { supported: true, reason: 'ok' };
const no = (reason: string): FamilyCheck => ({ supported: false, reason });
const support = (checks: Record<IpFamily, FamilyCheck>): FamilySupport => ({ check: async (f) => checks[f] });

describe('chooseFamilies: both families whenever the node supports both (kube-proxy dual-stack MetaProxier)', () => {
  it('both supported: dual-stack, IPv4 first', async () => {
    expect(await chooseFamilies(support({ ipv4: yes, ipv6: yes }))).toMatchObject({
      families: ['ipv4', 'ipv6'],
      dualStack: true,
    });
  });

  it('one supported: single-stack in that family', async () => {
    expect(await chooseFamilies(support({ ipv4: yes, ipv6: no('no kernel IPv6') }))).toMatchObject({
      families: ['ipv4'],
      dualStack: false,
    });
    expect(await chooseFamilies(support({ ipv4: no('no iptables'), ipv6: yes }))).toMatchObject({
      families: ['ipv6'],
      dualStack: false,
    });
  });

  it('neither: FamilySupportError naming both reasons', async () => {
    const e = await chooseFamilies(
      support({ ipv4: no('iptables is not usable: x'), ipv6: no('no kernel IPv6') }),
    ).catch((x) => x);
    expect(e).toBeInstanceOf(FamilySupportError);
    expect(e.code).toBe('KIPVS_FAMILY_UNSUPPORTED');
    expect(e.message).toBe('no IP family can be proxied: IPv4: iptables is not usable: x; IPv6: no kernel IPv6');
  });
});

describe('primaryFamily (kube-proxy detectNodeIPs): bindAddress, else the Node first IP, else IPv4', () => {
  it.each([
    ['0.0.0.0', [], 'ipv4', 'default'],
    ['::', [], 'ipv4', 'default'],
    ['0.0.0.0', ['fd00::1', '192.0.2.1'], 'ipv6', 'node'],
    ['0.0.0.0', ['192.0.2.1', 'fd00::1'], 'ipv4', 'node'],
    ['::', ['fd00::1'], 'ipv6', 'node'],
    ['fd00::7', ['192.0.2.1'], 'ipv6', 'bindAddress'],
    ['192.0.2.9', ['fd00::1'], 'ipv4', 'bindAddress'],
  ])('bindAddress %s, node IPs %j: %s from %s', (bind, ips, family, source) => {
    expect(primaryFamily(bind, ips)).toEqual({ family, source });
  });

  it('kube-proxy node IPs: one per family, the first of each, bindAddress in place of its family', () => {
    expect(kubeProxyNodeIPs('0.0.0.0', [])).toEqual([]);
    expect(kubeProxyNodeIPs('0.0.0.0', ['192.0.2.1', '198.51.100.1', 'fd00::1', 'fd00::2'])).toEqual([
      '192.0.2.1',
      'fd00::1',
    ]);
    expect(kubeProxyNodeIPs('::', ['fd00::1', '192.0.2.1'])).toEqual(['192.0.2.1', 'fd00::1']);
    expect(kubeProxyNodeIPs('fd00::9', ['192.0.2.1', 'fd00::1'])).toEqual(['192.0.2.1', 'fd00::9']);
    expect(kubeProxyNodeIPs('192.0.2.5', [])).toEqual(['192.0.2.5']);
  });

  it('checkPrimaryFamily: a single-stack node whose primary family is the other one cannot proxy (kube-proxy refuses to start)', async () => {
    const v4only = await chooseFamilies(support({ ipv4: yes, ipv6: no('no kernel IPv6') }));
    expect(() => checkPrimaryFamily(v4only, { family: 'ipv4', source: 'default' })).not.toThrow();
    expect(() => checkPrimaryFamily(v4only, { family: 'ipv6', source: 'bindAddress' })).toThrow(
      new FamilySupportError(
        'no support for primary IP family ipv6 (from bindAddress): no kernel IPv6; this node proxies ipv4 only',
      ),
    );
    const dual = await chooseFamilies(support({ ipv4: yes, ipv6: yes }));
    expect(() => checkPrimaryFamily(dual, { family: 'ipv6', source: 'node' })).not.toThrow();
  });
});

describe("proxierSettings: the families are the node's, clusterCIDR only feeds local-traffic detection", () => {
  it.each([[''], ['clusterCIDR: 10.244.0.0/16'], ['clusterCIDR: fd00:10:244::/56']])(
    '%s: families as given',
    (line) => {
      const { config } = decodeProxyConfig(
        ['apiVersion: kubeproxy.config.k8s.io/v1alpha1', 'kind: KubeProxyConfiguration', 'mode: ipvs', line].join('\n'),
      );
      expect(proxierSettings(config, ['ipv4', 'ipv6']).families).toEqual(['ipv4', 'ipv6']);
      expect(proxierSettings(config, ['ipv6']).families).toEqual(['ipv6']);
      expect(proxierSettings(config, ['ipv4', 'ipv6']).clusterCIDRs).toEqual(config.clusterCIDR);
    },
  );
});
