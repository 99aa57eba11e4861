import { decodeNewGen, encodeGetGen } from '../../lib/netlink/nft-gen-codec';
import { DecodeError } from '../../lib/errors';
import { be32, cstr, nla, u8 } from '../../testkit/nl-builder';

// Literals from include/uapi/linux/netfilter/nf_tables.h and nfnetlink.h on purpose, so a wrong
// constant in lib/uapi cannot hide in both sides: NFNL_SUBSYS_NFTABLES 10,
// NFT_MSG_GETGEN 16 -> nlmsg_type 0x0a10; NFTA_GEN_ID 1, NFTA_GEN_PROC_PID 2, NFTA_GEN_PROC_NAME 3.

describe('encodeGetGen', () => {
  it('type 0x0a10, nfgen_family AF_UNSPEC, no attributes', () => {
    const req = encodeGetGen();
    expect(req.type).toBe(0x0a10);
    expect(req.cmd).toBe(0);
    expect(req.attrs.length).toBe(0);
  });
});

describe('decodeNewGen', () => {
  it('the generation is big-endian; pid and process name as the kernel sends them', () => {
    const attrs = Buffer.concat([nla(1, be32(0x01020304)), nla(2, be32(4242)), nla(3, cstr('kube-ipvs'))]);
    expect(decodeNewGen(attrs)).toEqual({ id: 0x01020304, pid: 4242, procName: 'kube-ipvs' });
  });

  it('only NFTA_GEN_ID (an older kernel): the id alone; an unknown attribute is ignored', () => {
    expect(decodeNewGen(Buffer.concat([nla(1, be32(7)), nla(9, be32(1))]))).toEqual({ id: 7 });
  });

  it('no NFTA_GEN_ID, or one of the wrong size: DecodeError naming the attribute', () => {
    expect(() => decodeNewGen(nla(2, be32(1)))).toThrow(DecodeError);
    expect(() => decodeNewGen(nla(2, be32(1)))).toThrow(
      'decode NFT_MSG_NEWGEN>NFTA_GEN_ID at offset 0: missing attribute',
    );
    expect(() => decodeNewGen(nla(1, u8(7)))).toThrow(
      'NFT_MSG_NEWGEN>NFTA_GEN_ID at offset 0: expected 4 bytes, got 1',
    );
  });
});
