// scripts/node/e2e.ts reads ginkgo v2's JUnit report (the shape e2e.test wrote in the node lab:
// suite nodes beside the specs, status as an attribute, the reason in the failure's or skip's
// message) and judges kube-ipvs against kube-proxy by it.
import { CaseResult, parseJunit, regressions, resultTable } from '../../../scripts/node/e2e';

const junit = `<?xml version="1.0" encoding="UTF-8"?>
  <testsuites tests="5" disabled="2" errors="0" failures="1" time="140.2">
      <testsuite name="Kubernetes e2e suite" tests="5" skipped="2" failures="1">
          <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="0.013"></testcase>
          <testcase name="[It] [sig-network] Services should serve a basic endpoint from pods [Conformance] [sig-network, Conformance]" classname="Kubernetes e2e suite" status="failed" time="137.137">
              <failure message="service is not reachable within 2m0s timeout&#xA;on endpoint endpoint-test2:80 over TCP protocol" type="failed">[FAILED] service is not reachable&#xA;In [It]</failure>
              <system-err>&gt; Enter [BeforeEach]</system-err>
          </testcase>
          <testcase name="[It] [sig-network] Services should provide secure master service [Conformance] [sig-network, Conformance]" classname="Kubernetes e2e suite" status="passed" time="2.5"></testcase>
          <testcase name="[It] [sig-network] Services should preserve source pod IP for traffic thru service cluster IP [LinuxOnly] [sig-network, LinuxOnly]" classname="Kubernetes e2e suite" status="skipped" time="0">
              <skipped message="skipped"></skipped>
          </testcase>
          <testcase name="[It] [sig-network] Services should work after restarting kube-proxy [Disruptive] [sig-network, Disruptive]" classname="Kubernetes e2e suite" status="skipped" time="0.2">
              <skipped message="skipped - Requires at least 2 nodes (not 1) &amp; a provider &quot;gce&quot;"></skipped>
          </testcase>
          <testcase name="[ReportAfterSuite] Kubernetes e2e JUnit report" classname="Kubernetes e2e suite" status="passed" time="0"></testcase>
      </testsuite>
  </testsuites>`;

describe('parseJunit', () => {
  const cases = parseJunit(junit);

  it('keeps the specs only, named without "[It]" and the label list', () => {
    expect(cases.map((c) => c.name)).toEqual([
      '[sig-network] Services should serve a basic endpoint from pods [Conformance]',
      '[sig-network] Services should provide secure master service [Conformance]',
      '[sig-network] Services should preserve source pod IP for traffic thru service cluster IP [LinuxOnly]',
      '[sig-network] Services should work after restarting kube-proxy [Disruptive]',
    ]);
  });

  it('reads status, seconds and the reason (entities decoded)', () => {
    expect(cases[0]).toEqual({
      name: '[sig-network] Services should serve a basic endpoint from pods [Conformance]',
      status: 'failed',
      seconds: 137.137,
      message: 'service is not reachable within 2m0s timeout\non endpoint endpoint-test2:80 over TCP protocol',
    });
    expect(cases[1]!.status).toBe('passed');
    expect(cases[3]!.message).toBe('skipped - Requires at least 2 nodes (not 1) & a provider "gce"');
  });
});

describe('the comparison', () => {
  const kubeProxy: CaseResult[] = [
    { name: 'a', status: 'passed', seconds: 10, message: '' },
    { name: 'b', status: 'passed', seconds: 20, message: '' },
    { name: 'c', status: 'failed', seconds: 30, message: 'x' },
    { name: 'd', status: 'skipped', seconds: 0, message: 'skipped' },
    { name: 'e', status: 'skipped', seconds: 0, message: 'skipped - Requires at least 2 nodes' },
  ];
  const kubeIpvs: CaseResult[] = [
    { name: 'a', status: 'passed', seconds: 9, message: '' },
    { name: 'b', status: 'failed', seconds: 21, message: 'y' },
    { name: 'c', status: 'passed', seconds: 8, message: '' },
    { name: 'd', status: 'skipped', seconds: 0, message: 'skipped' },
    { name: 'e', status: 'skipped', seconds: 0, message: 'skipped - Requires at least 2 nodes' },
  ];

  it('a regression is a test that passes with kube-proxy and not with kube-ipvs, missing counts as not passing', () => {
    expect(regressions(kubeProxy, kubeIpvs)).toEqual(['b']);
    expect(regressions(kubeProxy, kubeIpvs.slice(1))).toEqual(['a', 'b']);
    expect(regressions(kubeIpvs, kubeProxy)).toEqual(['c']);
  });

  it('the table leaves out specs the selection filtered, keeps the framework skips with their reason, and counts', () => {
    const t = resultTable(
      new Map([
        ['kube-proxy', kubeProxy],
        ['kube-ipvs', kubeIpvs],
      ]),
    );
    expect(t).toEqual([
      '| test | kube-proxy | kube-ipvs | seconds |',
      '|---|---|---|---|',
      '| a | passed | passed | 10 / 9 |',
      '| b | passed | failed: y | 20 / 21 |',
      '| c | failed: x | passed | 30 / 8 |',
      '| e | skipped: skipped - Requires at least 2 nodes | skipped: skipped - Requires at least 2 nodes | 0 / 0 |',
      'kube-proxy: 2 passed, 1 failed, 1 skipped',
      'kube-ipvs: 2 passed, 1 failed, 1 skipped',
    ]);
  });
});
