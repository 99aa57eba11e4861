import { ConfigError } from '../../lib/errors';
import {
  parseBindAddress,
  configCidr,
  parseClusterCidrs,
  parseDetectLocalMode,
  parseMasqueradeBit,
  parseNodePortAddresses,
  parseScheduler,
} from '../../lib/config/config-values';

const error = (f: () => unknown): ConfigError => {
  try {
    f();
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('no ConfigError thrown');
};

describe('configCidr: canonical network, host bits cleared (net.ParseCIDR)', () => {
  it.each<[string, string]>([
    ['10.244.0.0/16', '10.244.0.0/16'],
    ['10.244.3.7/16', '10.244.0.0/16'],
    ['10.1.2.3/0', '0.0.0.0/0'],
    ['192.168.1.255/31', '192.168.1.254/31'],
    ['10.1.2.3/32', '10.1.2.3/32'],
    ['FD00:0:0::1/64', 'fd00::/64'],
    ['fd00:10:244::ff/56', 'fd00:10:244::/56'],
    ['2001:db8::1/128', '2001:db8::1/128'],
    ['2001:db8:ffff::/33', '2001:db8:8000::/33'],
  ])('%s -> %s', (text, canonical) => {
    expect(configCidr(text, 'f')).toBe(canonical);
  });

  it.each([
    '10.0.0.0',
    '10.0.0.0/33',
    'fd00::/129',
    '10.0.0/8',
    '010.0.0.0/8',
    'x/8',
    '10.0.0.0/',
    '10.0.0.0/-1',
    '10.0.0.0/8/8',
    '',
  ])('%j is refused naming the field and the value', (text) => {
    const e = error(() => configCidr(text, 'ipvs.excludeCIDRs[2]'));
    expect(e.code).toBe('KIPVS_CONFIG');
    expect(e.field).toBe('ipvs.excludeCIDRs[2]');
    expect(e.message).toContain('ipvs.excludeCIDRs[2]');
    expect(e.message).toContain(JSON.stringify(text));
  });
});

describe('parseBindAddress', () => {
  it.each<[string, string]>([
    ['0.0.0.0:10256', '0.0.0.0:10256'],
    ['0.0.0.0', '0.0.0.0:10256'],
    ['::', '[::]:10256'],
    ['[::]:9000', '[::]:9000'],
    ['[fd00:0::1]:80', '[fd00::1]:80'],
    ['127.0.0.1:10249', '127.0.0.1:10249'],
    ['fd00::1:80', '[fd00::1:80]:10256'], // a bare IPv6 address: the port is appended
  ])('%s -> %s', (text, canonical) => {
    expect(parseBindAddress(text, 'healthzBindAddress', 10256)).toBe(canonical);
  });

  it.each([
    ':10256',
    'localhost:10256',
    '0.0.0.0:0',
    '0.0.0.0:65536',
    '1.2.3.4:80:90',
    'fd00::1]:80',
    '0.0.0.0:http',
    '[10.0.0.1]:80x',
    'x',
  ])('%j is refused', (text) => {
    expect(error(() => parseBindAddress(text, 'metricsBindAddress', 10249)).message).toMatch(
      new RegExp(`^metricsBindAddress: ${JSON.stringify(text).replace(/[[\]]/g, '\\$&')} is not a valid IP:port`),
    );
  });
});

describe('lists and enums', () => {
  it('clusterCIDR: one, or one per family', () => {
    expect(parseClusterCidrs(['10.244.0.0/16'], 'c')).toEqual(['10.244.0.0/16']);
    expect(parseClusterCidrs([' 10.244.0.0/16', 'fd00:10:244::/56 '], 'c')).toEqual([
      '10.244.0.0/16',
      'fd00:10:244::/56',
    ]);
    expect(parseClusterCidrs([''], 'c')).toEqual([]);
    expect(error(() => parseClusterCidrs(['10.0.0.0/8', '10.1.0.0/16'], 'clusterCIDR')).message).toMatch(
      /clusterCIDR: .*dual-stack pair/,
    );
    expect(error(() => parseClusterCidrs(['10.0.0.0/8', 'fd00::/8', '10.1.0.0/16'], '--cluster-cidr')).field).toBe(
      '--cluster-cidr',
    );
  });

  it('nodePortAddresses: CIDRs or "primary" alone', () => {
    expect(parseNodePortAddresses(['10.0.0.5/24', '::/0'], 'n')).toEqual(['10.0.0.0/24', '::/0']);
    expect(parseNodePortAddresses(['primary'], 'n')).toEqual(['primary']);
    expect(error(() => parseNodePortAddresses(['primary', '10.0.0.0/8'], 'nodePortAddresses')).message).toMatch(
      /can't use both 'primary' and CIDRs/,
    );
    expect(error(() => parseNodePortAddresses(['10.0.0.0/8', 'eth0'], 'nodePortAddresses')).field).toBe(
      'nodePortAddresses[1]',
    );
  });

  it('schedulers: the kernel\'s ip_vs_* names and "" (rr)', () => {
    for (const s of [
      '',
      'rr',
      'wrr',
      'lc',
      'wlc',
      'lblc',
      'lblcr',
      'dh',
      'sh',
      'sed',
      'nq',
      'mh',
      'fo',
      'ovf',
      'twos',
    ]) {
      expect(parseScheduler(s, 'ipvs.scheduler')).toBe(s);
    }
    expect(error(() => parseScheduler('RR', 'ipvs.scheduler')).message).toMatch(
      /^ipvs.scheduler: unknown IPVS scheduler "RR"/,
    );
  });

  it('detectLocalMode: the four modes, "" is ClusterCIDR', () => {
    expect(parseDetectLocalMode('', 'd')).toBe('ClusterCIDR');
    expect(parseDetectLocalMode('InterfaceNamePrefix', 'd')).toBe('InterfaceNamePrefix');
    expect(error(() => parseDetectLocalMode('clustercidr', 'detectLocalMode')).message).toContain('"clustercidr"');
  });

  it('masqueradeBit: 0..31', () => {
    expect(parseMasqueradeBit(0, 'b')).toBe(0);
    expect(parseMasqueradeBit(31, 'b')).toBe(31);
    expect(error(() => parseMasqueradeBit(32, 'iptables.masqueradeBit')).message).toBe(
      'iptables.masqueradeBit: 32 is outside the range 0-31',
    );
    expect(error(() => parseMasqueradeBit(-1, 'b')).message).toContain('-1');
  });
});
