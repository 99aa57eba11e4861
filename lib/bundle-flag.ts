/**
 * Whether this code runs from the one-file bundle (scripts/bundle/build.mjs, esbuild's `define`
 * sets KUBE_IPVS_BUNDLE) or from tsc's dist/lib tree. The two sit at different depths, so the
 * few paths taken from __dirname differ, and the bundle already holds what the tree resolves at
 * run time.
 */
declare const KUBE_IPVS_BUNDLE: boolean | undefined;

/** true in dist/bundle/kube-ipvs.js, false in dist/lib */
export const IN_BUNDLE: boolean = typeof KUBE_IPVS_BUNDLE !== 'undefined' && KUBE_IPVS_BUNDLE === true;
