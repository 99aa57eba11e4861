// The operator views end to end, inside the VM: the real `kube-ipvs --config FILE` daemon and
// the fake API server as processes, the real kernel, and the `kube-ipvs service list`,
// `status` and `diff` commands as separate processes reading the daemon's /kube-ipvs/
// endpoints — then the kernel alone once the daemon is stopped.
//
// Addresses: services 10.96.0.0/16, pods 10.244.0.0/16 (no pod needs to exist: nothing here
// sends traffic), this node 192.0.2.1 on a dummy link (NodePorts are served there).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  e2eProxyConfig,
  KUBE_IPVS_BIN,
  LoggedProcess,
  LogLine,
  startFixtureApiServer,
  startKubeIpvs,
} from '../../testkit/processes';
import { run, tryRun } from '../../testkit/netns';
import { ServiceListResponse } from '../../lib/model/views';

const API_PORT = 16443;
const NODE = 'node-a';
const NODE_IP = '192.0.2.1';

type Obj = Record<string, unknown>;
const meta = (namespace: string, name: string, extra: Obj = {}) => ({
  namespace,
  name,
  uid: `uid-${namespace}-${name}`,
  ...extra,
});

function service(ns: string, name: string, spec: Obj): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(ns, name),
    spec: { type: 'ClusterIP', sessionAffinity: 'None', ipFamilies: ['IPv4'], ...spec, clusterIPs: [spec.clusterIP] },
    status: { loadBalancer: {} },
  };
}
function slice(ns: string, svc: string, port: number, portName: string, protocol: string, ips: string[]): Obj {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: meta(ns, `${svc}-1`, {
      labels: {
        'kubernetes.io/service-name': svc,
        'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
      },
    }),
    addressType: 'IPv4',
    ports: [{ name: portName, port, protocol }],
    endpoints: ips.map((ip) => ({
      addresses: [ip],
      conditions: { ready: true, serving: true, terminating: false },
      nodeName: 'node-b',
    })),
  };
}
const node: Obj = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: NODE, uid: 'uid-node-a', labels: { 'kubernetes.io/hostname': NODE } },
  spec: { podCIDR: '10.244.0.0/24', podCIDRs: ['10.244.0.0/24'] },
  status: { addresses: [{ type: 'InternalIP', address: NODE_IP }] },
};
const FIXTURES = [
  node,
  service('default', 'web', {
    type: 'NodePort',
    clusterIP: '10.96.0.10',
    ports: [{ name: 'http', port: 80, targetPort: 8080, nodePort: 30080, protocol: 'TCP' }],
  }),
  slice('default', 'web', 8080, 'http', 'TCP', ['10.244.1.2', '10.244.2.2']),
  service('kube-system', 'dns', { clusterIP: '10.96.0.14', ports: [{ name: 'dns', port: 53, protocol: 'UDP' }] }),
  slice('kube-system', 'dns', 53, 'dns', 'UDP', ['10.244.3.2']),
];

function config(dir: string): string {
  // no full sync during the test: the diff must see the drift before the daemon repairs it
  return e2eProxyConfig({ dir, node: NODE, ipvs: ['scheduler: rr', 'syncPeriod: 30m'] });
}

/** `kube-ipvs ARGS` as its own process: exit code and output. */
function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [KUBE_IPVS_BIN, ...args], { timeout: 120_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const isFullSync = (l: LogLine) => l.message === 'sync done' && l.full === true;

describe('kube-ipvs service list / status / diff against the running daemon', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-views-'));
  let apiserver: LoggedProcess;
  let daemon: LoggedProcess;

  beforeAll(async () => {
    run('ip', ['link', 'add', 'node0', 'type', 'dummy']);
    run('ip', ['addr', 'add', `${NODE_IP}/24`, 'dev', 'node0']);
    run('ip', ['link', 'set', 'node0', 'up']);
    apiserver = await startFixtureApiServer(dir, API_PORT, FIXTURES);
    fs.writeFileSync(path.join(dir, 'config.conf'), config(dir));
    daemon = startKubeIpvs(['--config', path.join(dir, 'config.conf')]);
    // (loading @kubernetes/client-node takes tens of seconds in the TCG guest, minutes on a busy host)
    await daemon.waitFor(isFullSync, 'the first sync', 0, 540_000);
  }, 600_000);

  afterAll(async () => {
    await daemon?.kill('SIGTERM');
    await apiserver?.kill('SIGTERM');
    tryRun('ipvsadm', ['-C']);
    tryRun('ip', ['link', 'del', 'node0']);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('service list: every frontend with its Service name, type and backends (text and -o json)', async () => {
    const json = await cli('service', 'list', '-o', 'json');
    expect(json.code).toBe(0);
    const list = JSON.parse(json.stdout) as ServiceListResponse;
    expect(list.source).toBe('daemon');
    expect(
      list.frontends.map((f) => [
        f.frontend,
        f.type,
        f.service,
        f.scheduler,
        f.backends.map((b) => `${b.address} ${b.state} ${b.weight}`),
      ]),
    ).toEqual([
      [
        '10.96.0.10:80/TCP',
        'ClusterIP',
        'default/web:http',
        'rr',
        ['10.244.1.2:8080 active 1', '10.244.2.2:8080 active 1'],
      ],
      [
        `${NODE_IP}:30080/TCP`,
        'NodePort',
        'default/web:http',
        'rr',
        ['10.244.1.2:8080 active 1', '10.244.2.2:8080 active 1'],
      ],
      ['10.96.0.14:53/UDP', 'ClusterIP', 'kube-system/dns:dns', 'rr', ['10.244.3.2:53 active 1']],
    ]);
    const text = await cli('service', 'list');
    expect(text.code).toBe(0);
    const lines = text.stdout.split('\n');
    expect(lines[0]).toMatch(/^ID\s+Frontend\s+Service Type\s+Service\s+Scheduler\s+Affinity\s+Backend$/);
    expect(lines[1]).toMatch(
      /^1\s+10\.96\.0\.10:80\/TCP\s+ClusterIP\s+default\/web:http\s+rr\s+None\s+1 => 10\.244\.1\.2:8080 \(active, weight 1\)$/,
    );
    expect(lines[2]).toMatch(/^\s+2 => 10\.244\.2\.2:8080 \(active, weight 1\)$/);
  });

  it('status: mode, node, devices and counts', async () => {
    const s = await cli('status', '--verbose');
    expect(s.code).toBe(0);
    expect(s.stdout).toMatch(/^Mode:\s+ipvs$/m);
    expect(s.stdout).toMatch(new RegExp(`^Node:\\s+${NODE} \\(${NODE_IP}\\)$`, 'm'));
    expect(s.stdout).toMatch(new RegExp(`^  node0 \\(NodePort\\): ${NODE_IP}$`, 'm'));
    expect(s.stdout).toMatch(
      /^Counts:\s+2 Services, 2 service ports, 3 virtual servers, 5 real servers \(0 draining\), 2 addresses on kube-ipvs0$/m,
    );
    expect(s.stdout).toMatch(/^- syncPeriod:\s+30m0s/m);
  });

  it('diff: nothing to change, exit 0', async () => {
    expect(await cli('diff')).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  it("diff after a real server is deleted behind the daemon's back: exactly the -a line that restores it, and nothing changes", async () => {
    run('ipvsadm', ['-d', '-t', '10.96.0.10:80', '-r', '10.244.1.2:8080']);
    const before = run('ipvsadm', ['-Sn']);
    expect(await cli('diff')).toEqual({
      code: 1,
      stdout: '-a -t 10.96.0.10:80 -r 10.244.1.2:8080 -m -w 1\n',
      stderr: '',
    });
    expect(run('ipvsadm', ['-Sn'])).toBe(before);
    // the daemon did not sync in between (its next full sync is 30 minutes away)
    expect(daemon.lines.filter(isFullSync)).toHaveLength(1);
  });

  it('service list with the daemon stopped: the kernel alone, types from the ipsets, names unknown', async () => {
    await daemon.kill('SIGTERM');
    const text = await cli('service', 'list');
    expect(text.code).toBe(0);
    const lines = text.stdout.split('\n');
    expect(lines[0]).toMatch(/^# kube-ipvs daemon not reachable .*Service names unknown/);
    expect(lines[1]).toMatch(/^ID\s+Frontend/);
    const json = await cli('service', 'list', '-o', 'json');
    expect(json.stderr).toMatch(/daemon not reachable/);
    const list = JSON.parse(json.stdout) as ServiceListResponse;
    expect(list.source).toBe('kernel');
    expect(
      list.frontends.map((f) => [f.frontend, f.type, f.service, f.backends.map((b) => `${b.address} ${b.state}`)]),
    ).toEqual([
      ['10.96.0.10:80/TCP', 'ClusterIP', null, ['10.244.2.2:8080 active']],
      [`${NODE_IP}:30080/TCP`, 'NodePort', null, ['10.244.1.2:8080 active', '10.244.2.2:8080 active']],
      ['10.96.0.14:53/UDP', 'ClusterIP', null, ['10.244.3.2:53 active']],
    ]);
  });
});
