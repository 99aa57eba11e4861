// Loads the kube-proxy bench's cluster (lab-bench-objects.ts) into the lab's real kube-apiserver,
// on the host, natively, before the VM boots: exactly Services svc-0 .. svc-(N-1) with one
// EndpointSlice of E endpoints each in the bench's namespace (what is missing is created, many
// POSTs in flight; Services and slices an earlier, larger run left are deleted), plus the
// namespace and the bench's Node. `kubectl apply` of 20,000 objects is far slower.
//
//   node dist/scripts/bench/lab-load.js LAB_DIR SERVICES ENDPOINTS
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { LabInfo } from '../../testkit/lab-client';
import { benchServiceName } from './daemon-fixtures';
import { forEachParallel, LabApi } from './lab-api';
import {
  BENCH_LABEL,
  labBenchNode,
  labBenchService,
  labBenchSlice,
  labBenchSliceName,
  NAMESPACE,
} from './lab-bench-objects';

const PARALLEL = Number(process.env.BENCH_LOAD_PARALLEL ?? 32);

async function names(api: LabApi, collection: string): Promise<Set<string>> {
  const selector = encodeURIComponent(
    Object.entries(BENCH_LABEL)
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
  );
  const r = await api.call(
    'GET',
    `${collection}?labelSelector=${selector}`,
    undefined,
    'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1',
  );
  if (r.status !== 200) throw new Error(`GET ${collection}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
  return new Set(
    ((JSON.parse(r.body) as { items: { metadata: { name: string } }[] | null }).items ?? []).map(
      (o) => o.metadata.name,
    ),
  );
}

async function main(): Promise<void> {
  const [dirArg, servicesArg, endpointsArg = '10'] = process.argv.slice(2);
  if (!dirArg || !servicesArg) throw new Error('usage: lab-load.js LAB_DIR SERVICES [ENDPOINTS]');
  const dir = path.resolve(dirArg);
  const services = Number(servicesArg);
  const endpoints = Number(endpointsArg);
  const info = JSON.parse(readFileSync(path.join(dir, 'lab.json'), 'utf8')) as LabInfo;
  const api = new LabApi(dir, `https://127.0.0.1:${info.apiservers.a.port}`, PARALLEL);
  const t0 = Date.now();
  await api.must(
    'POST',
    '/api/v1/namespaces',
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } },
    [409],
  );
  await api.must('POST', '/api/v1/nodes', labBenchNode(), [409]);
  const svcPath = `/api/v1/namespaces/${NAMESPACE}/services`;
  const slicePath = `/apis/discovery.k8s.io/v1/namespaces/${NAMESPACE}/endpointslices`;
  const haveSvc = await names(api, svcPath);
  const haveSlice = await names(api, slicePath);
  let created = 0;
  let deleted = 0;
  await forEachParallel(services, PARALLEL, async (i) => {
    if (!haveSvc.has(benchServiceName(i))) {
      await api.must('POST', svcPath, labBenchService(i), [409]);
      created++;
    }
    if (!haveSlice.has(labBenchSliceName(i))) {
      await api.must('POST', slicePath, labBenchSlice(i, endpoints), [409]);
      created++;
    }
  });
  // what a larger run left: svc-i with i >= services
  const index = (name: string) => Number(/^svc-(\d+)(-1)?$/.exec(name)?.[1] ?? -1);
  const extra = [
    ...[...haveSvc].filter((n) => index(n) >= services).map((n) => `${svcPath}/${n}`),
    ...[...haveSlice].filter((n) => index(n) >= services).map((n) => `${slicePath}/${n}`),
  ];
  await forEachParallel(extra.length, PARALLEL, async (k) => {
    await api.must('DELETE', extra[k]!, undefined, [404]);
    deleted++;
  });
  // a slice of another size (an earlier run at other ENDPOINTS): rewritten
  let resized = 0;
  if (haveSlice.size > 0) {
    const r = await api.must('GET', `${slicePath}?limit=1`);
    const first = (JSON.parse(r.body) as { items: { endpoints?: unknown[] }[] }).items[0];
    if (first && (first.endpoints?.length ?? 0) !== endpoints) {
      await forEachParallel(services, PARALLEL, async (i) => {
        await api.must('PUT', `${slicePath}/${labBenchSliceName(i)}`, labBenchSlice(i, endpoints));
        resized++;
      });
    }
  }
  await api.close();
  const seconds = (Date.now() - t0) / 1000;
  console.log(
    JSON.stringify({
      bench: 'kube-proxy',
      what: 'load',
      services,
      endpoints,
      created,
      deleted,
      resized,
      seconds,
      perSecond: (created + deleted + resized) / seconds,
    }),
  );
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(`lab-load: ${(e as Error).stack ?? e}`);
    process.exit(1);
  },
);
