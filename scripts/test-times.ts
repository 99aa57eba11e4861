// test-times.ts DIR — the per-file time table of a `make test` run, from the results
// scripts/test-all.sh keeps in DIR (default .test-results/last): jest's JSON per run
// (unit.json, lab.json, vm-N.json), the guest's wall clock per VM file (vm-N.wall: jest's
// start-up in the TCG guest included) and the phases' wall clocks (phases.txt).
// Prints, per run, the files slowest first, then each phase's wall time.
import * as fs from 'fs';
import * as path from 'path';

interface JestFileResult {
  name: string;
  startTime: number;
  endTime: number;
  status: string;
  assertionResults: { status: string; fullName: string; failureMessages?: string[] }[];
  /** a file that failed outside its tests (a beforeAll, a compile error) */
  message?: string;
}

interface FileTime {
  file: string;
  seconds: number;
  tests: number;
  failed: number;
  lane?: string;
  /** CPU seconds the file's processes used (the VM files, where the guest counted them) */
  cpu?: number;
}

function readJest(file: string): JestFileResult[] {
  const r = JSON.parse(fs.readFileSync(file, 'utf8')) as { testResults: JestFileResult[] };
  return r.testResults;
}

function shortName(name: string): string {
  return name.replace(/.*\/dist\//, '').replace(/\.js$/, '.ts');
}

function fromJest(results: JestFileResult[]): FileTime[] {
  return results.map((t) => ({
    file: shortName(t.name),
    seconds: (t.endTime - t.startTime) / 1000,
    tests: t.assertionResults.length,
    failed: t.assertionResults.filter((a) => a.status === 'failed').length,
  }));
}

/**
 * The VM files: the guest's wall clock around each jest process where it was kept, and their
 * failed tests (a file whose jest exited non-zero without a failed test in its results, or with
 * none written, is named too: it died outside its tests).
 */
function vmTimes(dir: string): { rows: FileTime[]; failed: string[] } {
  const rows: FileTime[] = [];
  const failed: string[] = [];
  for (const n of fs.readdirSync(dir).filter((f) => /^vm-\d+\.wall$/.test(f))) {
    const [file = '?', lane = '?', t0 = '0', t1 = '0', rc = '1', cpu] = fs
      .readFileSync(path.join(dir, n), 'utf8')
      .trim()
      .split(' ');
    const json = path.join(dir, n.replace(/\.wall$/, '.json'));
    const results = fs.existsSync(json) ? readJest(json) : [];
    const named = failures(results);
    failed.push(...named);
    if (rc !== '0' && named.length === 0)
      failed.push(`- ${shortName(file)}: jest exited ${rc} (no failed test in its results)`);
    rows.push({
      file: shortName(file),
      seconds: Number(t1) - Number(t0),
      tests: results.reduce((s, t) => s + t.assertionResults.length, 0),
      failed:
        results.reduce((s, t) => s + t.assertionResults.filter((a) => a.status === 'failed').length, 0) ||
        (rc === '0' ? 0 : 1),
      lane,
      ...(cpu === undefined ? {} : { cpu: Number(cpu) }),
    });
  }
  return { rows, failed };
}

/**
 * Every failed test by name, with the first lines of its message: printed last, so that a log
 * cut to its head and tail (CI's) still names what failed.
 */
function failures(results: JestFileResult[]): string[] {
  const out: string[] = [];
  const firstLines = (m: string): string =>
    m
      .replace(/\x1b\[[0-9;]*m/g, '')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .slice(0, 6)
      .map((l) => `    ${l}`)
      .join('\n');
  for (const t of results) {
    const failed = t.assertionResults.filter((a) => a.status === 'failed');
    for (const a of failed)
      out.push(`- ${shortName(t.name)}: ${a.fullName}\n${firstLines(a.failureMessages?.join('\n') ?? '')}`);
    if (failed.length === 0 && t.status === 'failed')
      out.push(`- ${shortName(t.name)}\n${firstLines(t.message ?? '')}`);
  }
  return out;
}

function table(title: string, rows: FileTime[]): string {
  const sorted = [...rows].sort((a, b) => b.seconds - a.seconds);
  const total = rows.reduce((s, r) => s + r.seconds, 0);
  const lines = [`## ${title}: ${rows.length} files, ${total.toFixed(0)} s summed`, ''];
  const lane = rows.some((r) => r.lane !== undefined);
  const cpu = rows.some((r) => r.cpu !== undefined);
  lines.push(
    `| file | s | tests | failed${lane ? ' | lane' : ''}${cpu ? ' | cpu s' : ''} |`,
    `|---|---:|---:|---:${lane ? '|---:' : ''}${cpu ? '|---:' : ''}|`,
  );
  for (const r of sorted) {
    const cells = [r.file, r.seconds.toFixed(1), r.tests, r.failed];
    if (lane) cells.push(r.lane ?? '');
    if (cpu) cells.push(r.cpu?.toFixed(1) ?? '');
    lines.push(`| ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

function main(): void {
  const dir = process.argv[2] ?? '.test-results/last';
  if (!fs.existsSync(dir)) {
    console.error(`test-times: no results in ${dir} (scripts/test-all.sh keeps them there)`);
    process.exit(2);
  }
  const parts: string[] = [];
  const failed: string[] = [];
  for (const run of ['unit', 'lab']) {
    const f = path.join(dir, `${run}.json`);
    if (!fs.existsSync(f)) continue;
    const results = readJest(f);
    parts.push(table(run, fromJest(results)));
    failed.push(...failures(results));
  }
  const vm = vmTimes(dir);
  failed.push(...vm.failed);
  if (vm.rows.length > 0) parts.push(table('vm (guest wall clock per file, jest start-up included)', vm.rows));
  const guestCpu = path.join(dir, 'vm-cpu.txt');
  if (fs.existsSync(guestCpu)) {
    const [busy = 0, total = 0, cpus = 0] = fs.readFileSync(guestCpu, 'utf8').trim().split(' ').map(Number);
    parts.push(
      `guest CPU over the lanes: busy ${busy} of ${total} CPU-seconds (${((100 * busy) / Math.max(total, 1)).toFixed(0)}%, ${cpus} CPUs)`,
    );
  }
  const phases = path.join(dir, 'phases.txt');
  if (fs.existsSync(phases)) {
    const rows = fs
      .readFileSync(phases, 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(' '))
      .map(([name = '?', t0 = '0', t1 = '0']) => `| ${name} | ${(Number(t1) - Number(t0)).toFixed(0)} |`);
    parts.push(['## phases (wall clock)', '', '| phase | s |', '|---|---:|', ...rows].join('\n'));
  }
  if (failed.length > 0) parts.push([`## failed: ${failed.length}`, '', ...failed].join('\n'));
  console.log(parts.join('\n\n'));
}

main();
