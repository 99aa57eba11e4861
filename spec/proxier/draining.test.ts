import { DrainingRealServers } from '../../lib/proxier/draining';

const INTERVAL = 15_000;

describe('DrainingRealServers', () => {
  it('counts real servers over every virtual server; a restart of a drain counts once', () => {
    const d = new DrainingRealServers();
    d.start('vs1', 'a', 0);
    d.start('vs1', 'b', 0);
    d.start('vs2', 'a', 0);
    d.start('vs1', 'a', 5); // set to weight 0 again
    expect(d.size).toBe(3);
    expect(d.get('vs1', 'a')).toEqual({ since: 5 });
    d.stop('vs1', 'a');
    d.stop('vs1', 'missing');
    d.stop('vs9', 'a');
    expect(d.size).toBe(2);
    d.dropVirtualServer('vs1');
    expect(d.size).toBe(1);
    expect([...d.realServersOf('vs1').keys()]).toEqual([]);
    expect([...d.realServersOf('vs2').keys()]).toEqual(['a']);
  });

  it('hasVirtualServer: while one of its real servers drains, and not after the last one stops', () => {
    const d = new DrainingRealServers();
    expect(d.hasVirtualServer('vs1')).toBe(false);
    d.start('vs1', 'a', 0);
    d.start('vs1', 'b', 0);
    d.stop('vs1', 'a');
    expect(d.hasVirtualServer('vs1')).toBe(true);
    d.stop('vs1', 'b');
    expect(d.hasVirtualServer('vs1')).toBe(false);
    d.start('vs2', 'a', 0);
    d.dropVirtualServer('vs2');
    expect(d.hasVirtualServer('vs2')).toBe(false);
  });

  it('a virtual server is due one interval after its oldest unread drain, in the order they fall due', () => {
    const d = new DrainingRealServers();
    d.start('vs1', 'a', 0);
    d.start('vs2', 'a', 1_000);
    d.start('vs1', 'b', 2_000); // joins vs1: vs1 stays due at 15 s
    d.start('vs3', 'a', 3_000);
    expect(d.due(14_999, INTERVAL, 16)).toEqual({ due: [], more: false, nextDue: 15_000 });
    expect(d.due(16_000, INTERVAL, 16)).toEqual({ due: ['vs1', 'vs2'], more: false, nextDue: 18_000 });
    expect(d.due(20_000, INTERVAL, 2)).toEqual({ due: ['vs1', 'vs2'], more: true, nextDue: 18_000 });
    expect(d.due(20_000, INTERVAL, 16)).toEqual({ due: ['vs1', 'vs2', 'vs3'], more: false, nextDue: Infinity });
  });

  it('a checked virtual server goes to the back, every drain of it read then', () => {
    const d = new DrainingRealServers();
    d.start('vs1', 'a', 0);
    d.start('vs1', 'b', 2_000);
    d.start('vs2', 'a', 1_000);
    d.checked('vs1', 16_000);
    expect(d.get('vs1', 'b')).toEqual({ since: 2_000 });
    expect(d.due(17_000, INTERVAL, 16)).toEqual({ due: ['vs2'], more: false, nextDue: 31_000 });
    d.checked('vs2', 17_000);
    expect(d.due(31_000, INTERVAL, 16).due).toEqual(['vs1']);
    // emptied and started again: due last
    d.stop('vs1', 'a');
    d.stop('vs1', 'b');
    d.start('vs1', 'c', 40_000);
    expect(d.due(60_000, INTERVAL, 16).due).toEqual(['vs2', 'vs1']);
  });

  it('replaceAll keeps the drains it is given as they were, starts the new ones now, drops the rest', () => {
    const d = new DrainingRealServers();
    d.start('old', 'x', 0);
    d.start('vs2', 'a', 1_000);
    d.start('vs1', 'a', 3_000);
    d.checked('vs2', 4_000); // vs2 now due at 19 s, after vs1 (18 s)
    d.replaceAll(
      [
        ['vs2', 'a'],
        ['vs3', 'a'],
        ['vs1', 'a'],
        ['vs1', 'b'],
      ],
      5_000,
    );
    expect(d.size).toBe(4);
    expect(d.get('old', 'x')).toBeUndefined();
    expect(d.get('vs1', 'a')).toEqual({ since: 3_000 });
    expect(d.get('vs1', 'b')).toEqual({ since: 5_000 });
    expect(d.get('vs2', 'a')).toEqual({ since: 1_000 });
    // each virtual server falls due when it did before; the new one, one interval from now
    expect(d.due(18_000, INTERVAL, 16)).toEqual({ due: ['vs1'], more: false, nextDue: 19_000 });
    expect(d.due(20_000, INTERVAL, 16)).toEqual({ due: ['vs1', 'vs2', 'vs3'], more: false, nextDue: Infinity });
  });
});
