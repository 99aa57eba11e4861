// Expected values are Go's time.ParseDuration / Duration.String results.
import { formatDurationMs, formatDurationNs, parseDurationMs, parseDurationNs } from '../../lib/config/duration';

describe('parseDurationNs', () => {
  it.each<[string, number]>([
    ['0', 0],
    ['-0', 0],
    ['+0', 0],
    ['0s', 0],
    ['30s', 30e9],
    ['1m30s', 90e9],
    ['500ms', 500e6],
    ['1h', 3600e9],
    ['1.5s', 1.5e9],
    ['.5s', 0.5e9],
    ['1.s', 1e9],
    ['15m0s', 900e9],
    ['1h2m3s4ms5us6ns', 3723004005006],
    ['2µs', 2000],
    ['2μs', 2000],
    ['+5m', 300e9],
    ['1.001ms', 1001000],
  ])('%s = %d ns', (text, ns) => {
    expect(parseDurationNs(text)).toBe(ns);
  });

  it.each<[string, RegExp]>([
    ['', /invalid duration ""/],
    ['30', /missing unit in duration "30"/],
    ['s', /invalid duration "s"/],
    ['.s', /invalid duration ".s"/],
    ['1x', /unknown unit "x" in duration "1x"/],
    ['1 s', /unknown unit " s"/],
    ['-1s', /negative duration "-1s"/],
    ['-', /invalid duration "-"/],
    ['1s-2s', /unknown unit "s-"/],
    ['3000000h', /invalid duration/],
    ['30S', /unknown unit "S"/],
  ])('%j is refused: %s', (text, message) => {
    expect(() => parseDurationNs(text)).toThrow(message);
  });

  it('parseDurationMs is milliseconds, fractions kept', () => {
    expect(parseDurationMs('1m30s')).toBe(90_000);
    expect(parseDurationMs('1500us')).toBe(1.5);
  });
});

describe('formatDurationNs (time.Duration.String)', () => {
  it.each<[number, string]>([
    [0, '0s'],
    [1, '1ns'],
    [1500, '1.5µs'],
    [500e6, '500ms'],
    [1.5e9, '1.5s'],
    [30e9, '30s'],
    [90e9, '1m30s'],
    [900e9, '15m0s'],
    [3600e9, '1h0m0s'],
    [3723.5e9, '1h2m3.5s'],
  ])('%d ns -> %s', (ns, text) => {
    expect(formatDurationNs(ns)).toBe(text);
  });

  it('parse(format(x)) = x for milliseconds', () => {
    for (const ms of [0, 1, 250, 999, 1000, 30_000, 90_500, 15 * 60_000, 86_400_000]) {
      expect(parseDurationMs(formatDurationMs(ms))).toBe(ms);
    }
  });
});
