// The part of the semver package (6.x, package.json dependencies) lib/cli/version.ts uses;
// the package ships no types and @types/semver is not installed.
declare module 'semver' {
  interface SemVer {
    readonly version: string;
  }
  function validRange(range: string): string | null;
  function coerce(version: string): SemVer | null;
  function satisfies(version: string | SemVer, range: string): boolean;
  const semver: { validRange: typeof validRange; coerce: typeof coerce; satisfies: typeof satisfies };
  export default semver;
}
