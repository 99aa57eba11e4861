/**
 * The V8 flags the kube-ipvs process runs with. They must be given to node itself (V8 sizes
 * its heap when it starts; v8.setFlagsFromString afterwards leaves the young generation as it
 * was), so they are spelled out where the process starts: the shebang of lib/cli/main.ts and
 * the image's scripts/image/kube-ipvs.sh, and here for what spawns it (tests, benchmarks).
 *
 * --max-semi-space-size=16: V8 sizes the young generation from the machine's memory (over a
 * hundred MB on a large machine), most of it resident after one cold start. With 16 MB the
 * proxy at 10,000 Services x 10 endpoints held about a quarter less after its first sync, in
 * the same time (scripts/bench/README.md); a daemon is idle between syncs and gains nothing
 * from a larger nursery.
 *
 * --expose-gc: the daemon runs one full collection when it goes quiet after a burst
 * (lib/daemon/idle-collector.ts), so the heap grown during an endpoint churn is given back.
 */
export const KUBE_IPVS_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=16', '--expose-gc'];
