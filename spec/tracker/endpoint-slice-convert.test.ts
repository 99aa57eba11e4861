// Expected values written by hand from the Kubernetes API (discovery/v1 EndpointSlice) and
// kube-proxy's endpointslicecache.go rules. Addresses: see testkit/builders.ts.
import { Refusal } from '../../lib/model/service';
import { convertEndpointSlice } from '../../lib/tracker/endpoint-slice-convert';
import { makeEndpointSlice } from '../../testkit/builders';

describe('convertEndpointSlice', () => {
  it('validates addresses, defaults conditions, marks local endpoints, keeps hints', () => {
    const slice = makeEndpointSlice('ns1', 'svc1', 'svc1-abc', (s) => {
      s.ports = [
        { name: 'p80', port: 8080, protocol: 'TCP' },
        { port: 53, protocol: 'UDP' },
        { name: 'bad', port: 0 },
        { name: 'x', port: 1, protocol: 'GRE' },
      ];
      s.endpoints = [
        { addresses: ['10.244.1.1', '10.244.1.99'], nodeName: 'node-a' },
        { addresses: ['10.244.2.1'], nodeName: 'node-b', conditions: { ready: false } },
        { addresses: ['10.244.2.2'], conditions: { ready: false, serving: true, terminating: true } },
        {
          addresses: ['10.244.2.3'],
          hints: { forZones: [{ name: 'zone-b' }, { name: 'zone-a' }], forNodes: [{ name: 'node-b' }] },
        },
        { addresses: ['2001:db8:244::1'] },
        { addresses: ['10.244.02.1'] },
        { addresses: [] },
      ];
    });
    const ref = (field: string, value: string, reason: string): Refusal => ({
      kind: 'EndpointSlice',
      namespace: 'ns1',
      name: 'svc1-abc',
      field,
      value,
      reason,
    });
    expect(convertEndpointSlice(slice, 'node-a')).toEqual({
      service: { namespace: 'ns1', name: 'svc1' },
      family: 'ipv4',
      ports: [
        { name: 'p80', protocol: 'TCP', port: 8080 },
        { name: '', protocol: 'UDP', port: 53 },
      ],
      endpoints: [
        { ip: '10.244.1.1', ready: true, serving: true, terminating: false, isLocal: true },
        { ip: '10.244.2.1', ready: false, serving: false, terminating: false, isLocal: false },
        { ip: '10.244.2.2', ready: false, serving: true, terminating: true, isLocal: false },
        {
          ip: '10.244.2.3',
          ready: true,
          serving: true,
          terminating: false,
          isLocal: false,
          zoneHints: ['zone-a', 'zone-b'],
          nodeHints: ['node-b'],
        },
      ],
      refusals: [
        ref('ports[2].port', '0', 'not a port 1..65535; port ignored'),
        ref('ports[3].protocol', 'GRE', 'not TCP, UDP or SCTP; port ignored'),
        ref('endpoints[4].addresses[0]', '2001:db8:244::1', 'not an IPv4 address; endpoint ignored'),
        ref('endpoints[5].addresses[0]', '10.244.02.1', 'not an IP address; endpoint ignored'),
        ref('endpoints[6].addresses', '[]', 'no address; endpoint ignored'),
      ],
    });
  });

  it('IPv6 slices canonicalise; FQDN slices carry no endpoints; unlabelled slices belong to no Service', () => {
    const v6 = makeEndpointSlice('ns1', 'svc1', 's6', (s) => {
      s.addressType = 'IPv6';
      s.ports = [{ name: '', port: 80, protocol: 'TCP' }];
      s.endpoints = [{ addresses: ['2001:DB8:244:0::1'] }];
    });
    expect(convertEndpointSlice(v6, 'node-a').endpoints).toEqual([
      { ip: '2001:db8:244::1', ready: true, serving: true, terminating: false, isLocal: false },
    ]);
    const fqdn = makeEndpointSlice('ns1', 'svc1', 'sf', (s) => {
      s.addressType = 'FQDN';
      s.endpoints = [{ addresses: ['db.example'] }];
    });
    expect(convertEndpointSlice(fqdn, 'node-a')).toEqual({
      service: { namespace: 'ns1', name: 'svc1' },
      family: undefined,
      ports: [],
      endpoints: [],
      refusals: [],
    });
    const orphan = makeEndpointSlice('ns1', 'svc1', 'so', (s) => (s.metadata!.labels = {}));
    expect(convertEndpointSlice(orphan, 'node-a').service).toBeUndefined();
  });
});
