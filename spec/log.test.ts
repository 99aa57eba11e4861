import { formatJson, formatText, levelForVerbosity, log, setLogFormat, setVerbosity } from '../lib/log';
import { logLineTimeMs } from '../testkit/processes';

describe('setVerbosity (--v)', () => {
  it.each<[number, string]>([
    [0, 'info'],
    [1, 'info'],
    [2, 'verbose'],
    [3, 'verbose'],
    [4, 'debug'],
    [10, 'debug'],
  ])('--v=%d is %s', (v, level) => {
    expect(levelForVerbosity(v)).toBe(level);
  });

  it('sets the process logger level, and child loggers follow', () => {
    const before = log.level;
    try {
      const child = log.child({ component: 't' });
      setVerbosity(4);
      expect(log.level).toBe('debug');
      expect(child.isDebugEnabled()).toBe(true);
      setVerbosity(0);
      expect(child.isDebugEnabled()).toBe(false);
    } finally {
      log.level = before;
    }
  });
});

describe('--logging-format', () => {
  const at = new Date(Date.UTC(2026, 10, 23, 15, 30, 12, 345));
  const info = (level: string, message: string, fields: Record<string, unknown> = {}) =>
    ({ level, message, [Symbol.for('level')]: level, ...fields }) as unknown as Parameters<typeof formatText>[0];

  it("text is klog's line: severity, date, time, pid, component, quoted message, key=value", () => {
    const line = formatText(
      info('info', 'sync done', { component: 'proxier', full: true, ipvsWrites: 5, node: 'n 1', first: ['a', 'b'] }),
      at,
    );
    expect(line).toBe(
      `I1123 15:30:12.345000 ${String(process.pid).padStart(7)} proxier] "sync done" full=true ipvsWrites=5 node="n 1" first=["a","b"]`,
    );
    expect(formatText(info('error', 'x "y"'), at)).toMatch(/^E1123 15:30:12\.345000 +\d+ kube-ipvs\] "x \\"y\\""$/);
    expect(formatText(info('warn', 'w'), at)).toMatch(/^W1123 /);
    expect(formatText(info('verbose', 'v'), at)).toMatch(/^I1123 /);
  });

  it("json has klog's keys (ts seconds, v, msg) plus level, component and the fields", () => {
    const obj = JSON.parse(
      formatJson(info('verbose', 'sync done', { component: 'proxier', full: false, err: new Error('boom') }), at),
    );
    expect(obj).toEqual({
      ts: at.getTime() / 1000,
      level: 'verbose',
      v: 2,
      component: 'proxier',
      msg: 'sync done',
      full: false,
      err: 'boom',
    });
    expect(JSON.parse(formatJson(info('error', 'e'), at))).toEqual({
      ts: at.getTime() / 1000,
      level: 'error',
      v: 0,
      msg: 'e',
    });
  });

  it('setLogFormat switches the process logger (and its children)', () => {
    const console = log.transports[0] as unknown as { log: (info: unknown, next: () => void) => void };
    const orig = console.log.bind(console);
    const captured: string[] = [];
    console.log = (i: unknown, next: () => void) => {
      captured.push(String((i as Record<symbol, unknown>)[Symbol.for('message')]));
      next();
    };
    try {
      setLogFormat('text');
      log.child({ component: 'c' }).info('hello', { n: 1 });
      setLogFormat('json');
      log.child({ component: 'c' }).info('hello', { n: 1 });
    } finally {
      console.log = orig;
      setLogFormat('json');
    }
    expect(captured[0]).toMatch(/^I\d{4} [\d:.]+ +\d+ c\] "hello" n=1$/);
    expect(JSON.parse(captured[1]!)).toEqual(
      expect.objectContaining({ level: 'info', v: 0, component: 'c', msg: 'hello', n: 1 }),
    );
  });
});

describe('logLineTimeMs (the e2e and bench clocks read the JSON lines)', () => {
  it("reads klog's ts (seconds) and the older ISO timestamp alike", () => {
    const at = Date.UTC(2026, 10, 23, 15, 30, 12, 345);
    const line = JSON.parse(
      formatJson({ level: 'info', message: 'm', [Symbol.for('level')]: 'info' } as never, new Date(at)),
    );
    expect(logLineTimeMs(line)).toBe(at);
    expect(logLineTimeMs({ timestamp: new Date(at).toISOString() })).toBe(at);
  });
});
