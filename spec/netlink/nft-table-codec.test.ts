import { decodeNewTable, encodeDeleteTables, encodeGetTables } from '../../lib/netlink/nft-table-codec';
import { DecodeError } from '../../lib/errors';
import { Bytes, be32, cstr, nla } from '../../testkit/nl-builder';

// Literals from include/uapi/linux/netfilter/nf_tables.h, nfnetlink.h and netfilter.h on purpose,
// so a wrong constant in lib/uapi cannot hide in both sides: NFNL_SUBSYS_NFTABLES 10,
// NFT_MSG_NEWTABLE 0, NFT_MSG_GETTABLE 1 -> nlmsg_type 0x0a01, NFT_MSG_DELTABLE 2 -> 0x0a02;
// NFNL_MSG_BATCH_BEGIN 0x10, NFNL_MSG_BATCH_END 0x11; NFTA_TABLE_NAME 1, _FLAGS 2, _USE 3,
// _HANDLE 4; NFPROTO_INET 1, NFPROTO_IPV4 2, NFPROTO_IPV6 10; NLM_F_ACK 0x4.

/** struct nfgenmsg: family, version 0, res_id big-endian */
const nfgen = (family: number, resId = 0) => new Bytes().u8(family).u8(0).u16be(resId).build();

describe('encodeGetTables', () => {
  it('type 0x0a01, nfgen_family NFPROTO_UNSPEC (every family), no attributes', () => {
    const req = encodeGetTables();
    expect([req.type, req.cmd, req.attrs.length]).toEqual([0x0a01, 0, 0]);
  });
});

describe('decodeNewTable', () => {
  it('the family from nfgenmsg, the name from NFTA_TABLE_NAME; flags, use and handle as the kernel sends them are skipped', () => {
    const attrs = Buffer.concat([
      nla(1, cstr('kube-proxy')),
      nla(2, be32(0)),
      nla(3, be32(12)),
      nla(4, new Bytes().u32be(0).u32be(5).build()),
    ]);
    expect(decodeNewTable(10, attrs)).toEqual({ family: 10, name: 'kube-proxy' });
  });

  it('no NFTA_TABLE_NAME: DecodeError naming the attribute', () => {
    expect(() => decodeNewTable(2, nla(3, be32(1)))).toThrow(DecodeError);
    expect(() => decodeNewTable(2, nla(3, be32(1)))).toThrow(
      'decode NFT_MSG_NEWTABLE>NFTA_TABLE_NAME at offset 0: missing attribute',
    );
  });
});

describe('encodeDeleteTables', () => {
  it('BATCH_BEGIN (res_id 10 big-endian), one DELTABLE per table with NLM_F_ACK, BATCH_END', () => {
    const msgs = encodeDeleteTables([
      { family: 2, name: 'kube-proxy' },
      { family: 10, name: 'kube-proxy' },
    ]);
    const begin = new Bytes().hex('00 00 00 0a').build();
    // "kube-proxy\0" is 11 bytes: nla length 15, one byte of padding
    const delIp = new Bytes().hex('02 00 00 00').u16le(15).u16le(1).raw(Buffer.from('kube-proxy\0')).u8(0).build();
    expect(msgs).toEqual([
      { type: 0x10, flags: 0, body: begin },
      { type: 0x0a02, flags: 0x4, body: delIp },
      { type: 0x0a02, flags: 0x4, body: Buffer.concat([nfgen(10), nla(1, cstr('kube-proxy'))]) },
      { type: 0x11, flags: 0, body: nfgen(0, 10) },
    ]);
  });

  it('no table: BEGIN and END alone', () => {
    expect(encodeDeleteTables([]).map((m) => m.type)).toEqual([0x10, 0x11]);
  });
});
