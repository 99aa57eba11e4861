/**
 * What kube-ipvs says of its own build, the way Kubernetes components say it: the version,
 * and the platform in Go's names ("linux/amd64"), for kubernetes_build_info and the
 * User-Agent of every API request.
 */

/** The build kube-ipvs reports: version and Go-style platform. */
export interface BuildInfo {
  /** package.json's version, "0.1.0" */
  readonly version: string;
  /** "linux/amd64" */
  readonly platform: string;
}

const GOARCH: Readonly<Record<string, string>> = {
  x64: 'amd64',
  arm64: 'arm64',
  ia32: '386',
  arm: 'arm',
  ppc64: 'ppc64le',
  s390x: 's390x',
};

/** Node's platform and architecture in Go's names (GOOS/GOARCH). */
export function goPlatform(platform: string = process.platform, arch: string = process.arch): string {
  return `${platform}/${GOARCH[arch] ?? arch}`;
}

/**
 * The User-Agent in client-go's shape (`kube-proxy/v1.37.2 (linux/amd64) kubernetes/<commit>`):
 * an API server's audit log and metrics tell kube-ipvs from kube-proxy and from any other
 * Node.js client (undici's own is `node`).
 */
export function userAgent(build: BuildInfo): string {
  return `kube-ipvs/v${build.version} (${build.platform}) kube-ipvs`;
}
