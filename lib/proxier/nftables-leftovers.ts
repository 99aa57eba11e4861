/**
 * kube-proxy's nftables-mode tables, `table ip kube-proxy` and `table ip6 kube-proxy`: kube-proxy
 * deletes exactly those two when it starts in ipvs (or iptables) mode (platformCleanup ->
 * nftables.CleanupLeftovers: per family one `delete table`, NotFound ignored). Left in the
 * kernel, their prerouting/output DNAT keeps sending ClusterIP traffic to stale endpoints and
 * their filter chains reject.
 *
 * kube-ipvs deletes them once, after its first full sync that succeeded: until IPVS, kube-ipvs0's
 * addresses, the ipsets and iptables are in place, their DNAT is what still serves the
 * ClusterIPs, so there is no gap. A failure is logged and tried again after the next full sync
 * that succeeds; once they are gone (or were never there) the listing is never read again. Any
 * other table, an `inet kube-proxy` included, is never touched (isKubeProxyNftTable).
 */
import { constants as osConstants } from 'node:os';
import type winston from 'winston';
import { errnoName, hasErrno } from '../errors';
import type { NftTables } from '../kernel/nftables/nftables';
import { describeNftTable, isKubeProxyNftTable } from '../model/nft-table';

/** a listing followed by a deletion: a table deleted by someone else in between aborts it (ENOENT), and the next listing no longer shows it */
const ATTEMPTS = 3;

/** Deletes kube-proxy's nftables-mode tables once, after a full sync (see the file comment). */
export class NftablesLeftovers {
  private removed = false;

  constructor(private readonly deps: { readonly nftables: NftTables; readonly log: winston.Logger }) {}

  /** After a full sync that succeeded; never throws (a failure is logged, retried next time). */
  async afterFullSync(): Promise<void> {
    if (this.removed) return;
    try {
      await this.remove();
      this.removed = true;
    } catch (e) {
      const errno = (e as { errno?: unknown }).errno;
      this.deps.log.warn(
        `removing kube-proxy's nftables-mode tables failed, tried again after the next full sync: ${e instanceof Error ? e.message : String(e)}`,
        {
          code: (e as { code?: string }).code,
          ...(typeof errno === 'number' && errno > 0 ? { errno: errnoName(errno) } : {}),
        },
      );
    }
  }

  private async remove(): Promise<void> {
    const { nftables, log } = this.deps;
    for (let attempt = 1; ; attempt++) {
      const found = (await nftables.listTables()).filter(isKubeProxyNftTable);
      if (found.length === 0) return;
      try {
        await nftables.deleteTables(found);
      } catch (e) {
        if (attempt < ATTEMPTS && hasErrno(e, osConstants.errno.ENOENT)) continue;
        throw e;
      }
      for (const t of found)
        log.info(
          `removed kube-proxy's nftables-mode ${describeNftTable(t)} (kube-proxy deletes it too when it starts in ipvs mode)`,
        );
      return;
    }
  }
}
