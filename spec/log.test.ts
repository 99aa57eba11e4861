import { levelForVerbosity, log, setVerbosity } from '../lib/log';

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
