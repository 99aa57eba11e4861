/**
 * kube-proxy's flag set normalises every flag name as component-base's WordSepNormalizeFunc
 * does (k8s.io/component-base/cli/flag): `_` becomes `-`, so `--hostname_override=node-1` is
 * `--hostname-override=node-1`. Only the name of a long flag changes (before any `=`), never a
 * value, and nothing after `--`.
 */
export function normalizeFlagNames(argv: readonly string[]): string[] {
  const end = argv.indexOf('--');
  return argv.map((a, i) => {
    if ((end >= 0 && i >= end) || !a.startsWith('--') || !a.includes('_')) return a;
    const eq = a.indexOf('=');
    const name = eq < 0 ? a : a.slice(0, eq);
    return name.replaceAll('_', '-') + (eq < 0 ? '' : a.slice(eq));
  });
}
