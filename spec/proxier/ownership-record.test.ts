// The ownership record's writer alone (lib/proxier/ownership-record.ts) over FakeIpset, whose
// maxelem refuses an add beyond it as the kernel does (pinned in spec/vm/ipset.vm.test.ts): the
// record is sized from the frontends, and grown beside itself and swapped in when they outgrow it.
import winston from 'winston';
import { FakeIpset } from '../../testkit/kernel/fake-ipset';
import { OwnershipRecord } from '../../lib/proxier/ownership-record';
import { VirtualServerSpec } from '../../lib/model/ipvs';
import { recordMaxelem } from '../../lib/model/ownership-record';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';

const quiet = winston.createLogger({ silent: true });
const frontends = (n: number): VirtualServerSpec[] =>
  Array.from({ length: n }, (_, i) => ({
    af: AF_INET,
    protocol: IPPROTO_TCP,
    address: `10.${96 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`,
    port: 80,
    fwmark: 0,
    scheduler: 'rr',
  }));
const header = async (fake: FakeIpset) =>
  (await fake.save()).split('\n').filter((l) => l.startsWith('create KUBE-IPVS-OWNED'));

async function fullSync(fake: FakeIpset, record: OwnershipRecord, owned: VirtualServerSpec[]): Promise<number> {
  const counts = { execs: 0 };
  record.load(await fake.observe(), ['ipv4']);
  record.rewrite(owned);
  await record.before([], () => undefined, owned.length, counts);
  return counts.execs;
}

describe('the ownership record is sized from the frontends (issue 39 item 3)', () => {
  it('maxelem: 65,536 up to 32,768 frontends, then twice the frontends; never below kube-proxy default', () => {
    expect([0, 1, 32_768, 32_769, 65_536, 100_000].map(recordMaxelem)).toEqual([
      65_536, 65_536, 65_536, 131_072, 131_072, 262_144,
    ]);
  });

  it('created at 65,536 for 32,768 frontends; 40,000 rebuild it at 131,072 beside itself and swap it in, nothing refused', async () => {
    const fake = new FakeIpset();
    const record = new OwnershipRecord({ ipsets: { ipv4: fake }, log: quiet });
    expect(await fullSync(fake, record, frontends(32_768))).toBe(1);
    expect(await header(fake)).toEqual([
      'create KUBE-IPVS-OWNED hash:ip,port family inet hashsize 1024 maxelem 65536 comment bucketsize 12 initval 0x00000000',
    ]);
    expect(fake.members('KUBE-IPVS-OWNED')!.size).toBe(32_768);
    // nothing changed: no write
    expect(await fullSync(fake, record, frontends(32_768))).toBe(0);

    expect(await fullSync(fake, record, frontends(40_000))).toBe(1);
    expect(await header(fake)).toEqual([
      'create KUBE-IPVS-OWNED hash:ip,port family inet hashsize 1024 maxelem 131072 comment bucketsize 12 initval 0x00000000',
    ]);
    expect(fake.members('KUBE-IPVS-OWNED')!.size).toBe(40_000);
    expect(fake.has('KUBE-IPVS-OWNED-NEW')).toBe(false);
    expect(
      fake.restores
        .at(-1)!
        .split('\n')
        .filter((l) => !l.startsWith('add ')),
    ).toEqual([
      'create KUBE-IPVS-OWNED-NEW hash:ip,port family inet hashsize 1024 maxelem 131072 comment',
      'flush KUBE-IPVS-OWNED-NEW',
      'swap KUBE-IPVS-OWNED-NEW KUBE-IPVS-OWNED',
      'destroy KUBE-IPVS-OWNED-NEW',
      '',
    ]);
  });

  it('at the kernel cap a set without room refuses the add ("Hash is full"): what the rebuild avoids', async () => {
    const fake = new FakeIpset();
    await fake.restore(
      'create T hash:ip,port family inet hashsize 1024 maxelem 2 comment\nadd T 10.96.0.1,tcp:80\nadd T 10.96.0.2,tcp:80\n',
    );
    await expect(fake.restore('add T 10.96.0.3,tcp:80\n')).rejects.toThrow(/Hash is full, cannot add more elements/);
  });
});
