import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfigError, loadKubeConfig } from '../../lib/k8s/kubeconfig';
import { kubeconfigFor } from '../../testkit/fake-apiserver';

describe('loadKubeConfig', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'kubeconfig-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const file = (text: string): string => {
    const f = join(dir, 'config');
    writeFileSync(f, text);
    return f;
  };

  it('reads --kubeconfig', () => {
    const kc = loadKubeConfig({ kubeconfig: file(kubeconfigFor('http://127.0.0.1:6443')) });
    expect(kc.getCurrentCluster()).toMatchObject({ server: 'http://127.0.0.1:6443', skipTLSVerify: true });
  });

  it('--master replaces the kubeconfig server and keeps the rest of the cluster entry', () => {
    const kc = loadKubeConfig({
      kubeconfig: file(kubeconfigFor('http://127.0.0.1:6443')),
      master: 'https://10.0.0.1:443',
    });
    expect(kc.getCurrentCluster()).toMatchObject({ name: 'fake', server: 'https://10.0.0.1:443', skipTLSVerify: true });
  });

  it('--master alone: that server, no credentials, http accepted', () => {
    const kc = loadKubeConfig({ master: 'http://192.0.2.1:8080', env: {} });
    expect(kc.getCurrentCluster()).toMatchObject({ server: 'http://192.0.2.1:8080', skipTLSVerify: true });
    const https = loadKubeConfig({ master: 'https://192.0.2.1:6443', env: {} });
    expect(https.getCurrentCluster()).toMatchObject({ server: 'https://192.0.2.1:6443', skipTLSVerify: false });
  });

  it('a kubeconfig with an http server and no insecure-skip-tls-verify still works, as with kube-proxy', () => {
    const plain = `{"apiVersion":"v1","kind":"Config","clusters":[{"name":"c","cluster":{"server":"http://127.0.0.1:8080"}}],"users":[{"name":"u","user":{}}],"contexts":[{"name":"x","context":{"cluster":"c","user":"u"}}],"current-context":"x"}`;
    expect(loadKubeConfig({ kubeconfig: file(plain) }).getCurrentCluster()).toMatchObject({
      server: 'http://127.0.0.1:8080',
      skipTLSVerify: true,
    });
  });

  it('in-cluster: the service-account token and KUBERNETES_SERVICE_HOST/PORT (IPv6 bracketed)', () => {
    const sa = join(dir, 'var/run/secrets/kubernetes.io/serviceaccount');
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, 'token'), 'tok');
    const kc = loadKubeConfig({
      env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' },
      inClusterRoot: dir,
    });
    expect(kc.getCurrentCluster()?.server).toBe('https://[fd00::1]:443');
    expect(process.env.KUBERNETES_SERVICE_HOST).not.toBe('fd00::1');
  });

  it.each([
    [{ kubeconfig: '/nonexistent/kubeconfig' }, /^kubeconfig \/nonexistent\/kubeconfig: /],
    [{ master: 'not a url' }, /--master "not a url" is not a URL/],
    [{ master: 'ftp://x:1' }, /scheme must be http or https/],
  ])('refuses %j with a KubeConfigError naming it', (opts, msg) => {
    expect(() => loadKubeConfig(opts)).toThrow(KubeConfigError);
    expect(() => loadKubeConfig(opts)).toThrow(msg);
  });

  describe('a kubeconfig that cannot be used: one line, no secret (issue 25 item 9)', () => {
    const SECRET_TOKEN = 'abcdef.0123456789abcdef';
    const SECRET_KEY = 'LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tc2VjcmV0a2V5';
    const good = (user: string, extra = '') => `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://10.0.0.1:6443
users:
- name: u
  user:
    token: ${SECRET_TOKEN}
    client-key-data: ${SECRET_KEY}
${extra}contexts:
- name: x
  context:
    cluster: c
    user: ${user}
current-context: x
`;
    const thrown = (f: string): Error => {
      try {
        loadKubeConfig({ kubeconfig: f });
      } catch (e) {
        return e as Error;
      }
      throw new Error('no error');
    };

    it('bad YAML: the file, line and column, and nothing of its lines', () => {
      // a tab where YAML wants spaces, on the line after the token
      const f = file(good('u').replace(`    client-key-data: ${SECRET_KEY}`, `\tclient-key-data: ${SECRET_KEY}`));
      const e = thrown(f);
      expect(e).toBeInstanceOf(KubeConfigError);
      expect(e.message).toMatch(new RegExp(`^kubeconfig ${f}: YAML error at line 11, column 1: `));
      expect(e.message).not.toContain('\n');
      expect(e.message).not.toContain(SECRET_TOKEN);
      expect(e.message).not.toContain(SECRET_KEY);
      expect(e.message).not.toContain('client-key-data');
    });

    // js-yaml puts a tag, an alias or a tag handle in its reason: written where a value goes,
    // that is the secret itself (issue 39 item 9)
    it.each([
      ['a verbatim tag', `!<${SECRET_TOKEN}>`],
      ['a verbatim tag before a value', `!<${SECRET_TOKEN}> x`],
      ['a local tag', `!${SECRET_TOKEN} x`],
      ['an alias', `*${SECRET_TOKEN}`],
      ['a tag with a flow character', `!<${SECRET_TOKEN}{> x`],
      ['an undeclared tag handle', `!${SECRET_TOKEN.replace('.', '')}!y z`],
    ])('%s where the token goes: the reason, and nothing of the token', (_name, value) => {
      const f = file(good('u').replace(`    token: ${SECRET_TOKEN}\n`, `    token: ${value}\n`));
      const e = thrown(f);
      expect(e).toBeInstanceOf(KubeConfigError);
      expect(e.message).toMatch(new RegExp(`^kubeconfig ${f}: YAML error at line 10, column \\d+: \\w`));
      expect(e.message).not.toContain('\n');
      // not the token, nor any 6 characters of it
      for (let i = 0; i + 6 <= SECRET_TOKEN.length; i++) expect(e.message).not.toContain(SECRET_TOKEN.slice(i, i + 6));
      expect(e.message).not.toContain(SECRET_KEY);
      expect((e as { cause?: unknown }).cause).toBeUndefined();
    });

    it("a context naming a user the file does not have is refused, naming the user (client-go's validation)", () => {
      const e = thrown(file(good('nobody')));
      expect(e).toBeInstanceOf(KubeConfigError);
      expect(e.message).toMatch(/user "nobody" .*not found/);
      expect(e.message).not.toContain('\n');
    });

    it('a tokenFile that is not there is refused in one line', () => {
      const f = file(
        good('u').replace(`    token: ${SECRET_TOKEN}\n`, `    tokenFile: ${join(dir, 'missing-token')}\n`),
      );
      const e = thrown(f);
      expect(e).toBeInstanceOf(KubeConfigError);
      expect(e.message).toContain('missing-token');
      expect(e.message).not.toContain('\n');
      expect(e.message).not.toContain(SECRET_KEY);
    });
  });

  it('refuses a kubeconfig without a current cluster', () => {
    const f = file(`{"apiVersion":"v1","kind":"Config","clusters":[],"users":[],"contexts":[],"current-context":""}`);
    expect(() => loadKubeConfig({ kubeconfig: f })).toThrow(/no current cluster/);
  });
});
