// runDaemon's start-up line (issue 41 item 12): what an operator reads first in the log.
import { defaultProxyConfig } from '../../lib/config/decode-config';
import { startingLine } from '../../lib/daemon/daemon';

describe('the start-up line', () => {
  it('names the version, the config file and the mode, the node first (the bench and VM tests read it)', () => {
    const config = { ...defaultProxyConfig(), ipvs: { ...defaultProxyConfig().ipvs, scheduler: 'wrr' } };
    expect(
      startingLine(
        config,
        {
          verbosity: 0,
          configFile: '/var/lib/kube-proxy/config.conf',
          build: { version: '0.1.0', platform: 'linux/amd64' },
        },
        'demo-node',
      ),
    ).toBe(
      'kube-ipvs starting: node demo-node, v0.1.0, config /var/lib/kube-proxy/config.conf, mode ipvs, scheduler wrr',
    );
  });

  it('says when there is no file: the flags and the defaults alone', () => {
    expect(startingLine(defaultProxyConfig(), { verbosity: 0 }, 'n1')).toBe(
      'kube-ipvs starting: node n1, version unknown, config none (flags and defaults only), mode ipvs, scheduler rr',
    );
  });
});
