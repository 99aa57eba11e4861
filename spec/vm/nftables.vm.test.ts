// Inside the QEMU VM only (Linux 6.1, nft 1.0.6): NftTablesNetlink against the kernel, and
// FakeNftTables given the same steps must answer the same: the listing (every family, in
// creation order), the deletion of kube-proxy's two nftables-mode tables as ONE transaction
// (the nf_tables generation moves by exactly 1), ENOENT for a table not there (or named twice)
// with nothing deleted, and every other table (inet kube-proxy, ip foreign) left as it was.
// The tables are made with `nft -f -` as kube-proxy's nftables mode makes its own: a map of
// service verdicts, DNAT chains hooked at prerouting and output, a filter chain that rejects
// (testkit/kube-proxy-leftovers.ts).
// Addresses: 10.96.0.0/12 cluster IPs, 10.244.0.0/16 pods, fd00::/8 (IPv6).
import { ChildProcessExec, checkExec } from '../../lib/kernel/exec';
import { NftTablesNetlink, openNftTables } from '../../lib/kernel/nftables/nftables-netlink';
import { FakeNftTables } from '../../testkit/kernel/fake-nftables';
import { NftGenerationNetlink, openNftGeneration } from '../../lib/kernel/iptables/nft-generation';
import { NetlinkError } from '../../lib/errors';
import { NftTable } from '../../lib/model/nft-table';
import { INET_KUBE_PROXY_NFT_TABLE, kubeProxyNftTable } from '../../testkit/kube-proxy-leftovers';

const exec0 = new ChildProcessExec();
const sh = async (script: string, stdin?: string) =>
  checkExec('bash', ['-c', script], await exec0.run('bash', ['-c', script], stdin)).stdout;

const OTHERS = `${INET_KUBE_PROXY_NFT_TABLE}
table ip foreign {
  chain prerouting {
    type nat hook prerouting priority dstnat; policy accept;
  }
}
`;
const kubeProxyLike = (family: 'ip' | 'ip6') =>
  kubeProxyNftTable(
    family,
    family === 'ip'
      ? { vip: '10.96.0.10', port: 80, endpoint: '10.244.1.2:8080' }
      : { vip: 'fd00::a', port: 80, endpoint: 'fd00:244::2:8080' },
  );

const ip = { family: 2, name: 'kube-proxy' };
const ip6 = { family: 10, name: 'kube-proxy' };
const inet = { family: 1, name: 'kube-proxy' };
const foreign = { family: 2, name: 'foreign' };

let nft: NftTablesNetlink;
let gen: NftGenerationNetlink;
const twin = new FakeNftTables();

beforeAll(() => {
  nft = openNftTables();
  gen = openNftGeneration();
});
afterAll(() => {
  nft.close();
  gen.close();
});

/** the kernel's and the twin's answer to the same deletion: errno (0: done) and how far each generation moved */
async function both(tables: readonly NftTable[]): Promise<{ kernel: [number, number]; twin: [number, number] }> {
  const errno = (e: unknown) => {
    if (!(e instanceof NetlinkError)) throw e;
    return e.errno;
  };
  const g = await gen.read();
  const k = await nft.deleteTables(tables).then(() => 0, errno);
  const kernel: [number, number] = [k, (await gen.read()) - g];
  const t0 = twin.generation;
  const t = await twin.deleteTables(tables).then(() => 0, errno);
  return { kernel, twin: [t, twin.generation - t0] };
}

describe('nf_tables tables: NftTablesNetlink on this kernel and FakeNftTables agree', () => {
  it('list, refuse, delete in one transaction, leave the others', async () => {
    expect(await nft.listTables()).toEqual([]);
    await sh('nft -f -', kubeProxyLike('ip') + OTHERS + kubeProxyLike('ip6'));
    for (const t of [ip, inet, foreign, ip6]) twin.addTable(t);
    expect(await nft.listTables()).toEqual([ip, inet, foreign, ip6]);
    expect(await twin.listTables()).toEqual(await nft.listTables());

    // a table not there, or named twice: ENOENT, the transaction aborted whole, nothing committed
    expect(await both([ip, { family: 10, name: 'absent' }])).toEqual({ kernel: [2, 0], twin: [2, 0] });
    // the refusal names the table the kernel refused
    for (const t of [nft, twin])
      await expect(t.deleteTables([ip, { family: 10, name: 'absent' }])).rejects.toThrow(
        /^delete nftables table ip6 absent: ENOENT/,
      );
    expect(await both([ip, ip6, ip])).toEqual({ kernel: [2, 0], twin: [2, 0] });
    expect(await both([{ family: 1, name: 'absent' }, ip6])).toEqual({ kernel: [2, 0], twin: [2, 0] });
    expect(await nft.listTables()).toEqual([ip, inet, foreign, ip6]);

    // kube-proxy's two tables: one transaction
    expect(await both([ip, ip6])).toEqual({ kernel: [0, 1], twin: [0, 1] });
    expect(await nft.listTables()).toEqual([inet, foreign]);
    expect(await twin.listTables()).toEqual(await nft.listTables());
    // as nft sees it: the others untouched, chains and all
    const listed = await sh('nft list ruleset');
    expect(listed).toContain('table inet kube-proxy {');
    expect(listed).toContain('table ip foreign {');
    expect(listed).toContain('type nat hook prerouting priority dstnat; policy accept;');
    expect(listed).not.toMatch(/table ip6? kube-proxy/);

    // gone now: ENOENT; nothing to delete sends nothing
    expect(await both([ip])).toEqual({ kernel: [2, 0], twin: [2, 0] });
    expect(await both([])).toEqual({ kernel: [0, 0], twin: [0, 0] });
  });
});
