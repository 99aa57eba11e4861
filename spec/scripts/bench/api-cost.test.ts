import { auditRequests } from '../../../scripts/bench/api-cost';
import type { AuditEvent } from '../../../testkit/lab-client';

const ev = (
  auditID: string,
  stage: string,
  verb: string,
  userAgent: string,
  received: string,
  at: string,
): AuditEvent => ({
  auditID,
  stage,
  verb,
  requestURI: '/api/v1/services',
  user: { username: 'u' },
  userAgent,
  requestReceivedTimestamp: received,
  stageTimestamp: at,
});

describe('auditRequests', () => {
  it("counts a side's requests once each (a watch when it starts, the rest when they end), with the server's latency of those that end", () => {
    const t = (ms: number) => new Date(Date.UTC(2026, 10, 27, 0, 0, 0, ms)).toISOString();
    const events = [
      ev('w1', 'ResponseStarted', 'watch', 'kube-ipvs/1.0', t(0), t(5)),
      ev('l1', 'ResponseStarted', 'list', 'kube-ipvs/1.0', t(10), t(12)),
      ev('l1', 'ResponseComplete', 'list', 'kube-ipvs/1.0', t(10), t(40)),
      ev('w0', 'ResponseComplete', 'watch', 'kube-ipvs/1.0', t(-9000), t(50)),
      ev('x1', 'ResponseComplete', 'list', 'kube-proxy/v1.37.2', t(20), t(21)),
    ];
    expect(auditRequests(events, 'kube-ipvs/')).toEqual({
      requests: { watch: 1, list: 1 },
      requestsTotal: 2,
      received: [Date.parse(t(0)), Date.parse(t(10))],
      latenciesMs: [30],
    });
  });
});
