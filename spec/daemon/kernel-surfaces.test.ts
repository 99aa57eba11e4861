// The daemon's first kernel step without root (issue 41 item 9): one line, nothing else tried.
import { defaultProxyConfig } from '../../lib/config/decode-config';
import { openIpvsAndLink, DaemonLog } from '../../lib/daemon/kernel-surfaces';
import { FakeIpvs } from '../../testkit/kernel/fake-ipvs';

describe('openIpvsAndLink without CAP_NET_ADMIN', () => {
  it('the first IPVS request refused (EPERM): one error line naming what it needed, the socket closed, no kernel', async () => {
    const lines: { level: string; msg: string }[] = [];
    const at = (level: string) => (msg: string) => lines.push({ level, msg });
    const log = { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') } as unknown as DaemonLog;
    const ipvs = new FakeIpvs({ privileged: false });
    let closed = false;
    ipvs.close = () => {
      closed = true;
    };
    expect(await openIpvsAndLink(defaultProxyConfig(), log, { ipvs: async () => ipvs })).toBeUndefined();
    expect(lines).toEqual([
      {
        level: 'error',
        msg: 'kube-ipvs needs root (CAP_NET_ADMIN) for the IPVS table: get IPVS info: operation not permitted (needs CAP_NET_ADMIN in the network namespace) (EPERM)',
      },
    ]);
    expect(closed).toBe(true);
  });
});
