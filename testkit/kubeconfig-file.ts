import { writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * A kubeconfig file in YAML, the way kubeadm writes one, in `dir`: one cluster at `server`
 * with the extra `cluster` lines (a CA, insecure-skip-tls-verify), one user with the `user`
 * lines (a token, a tokenFile, client certificates, an exec block; none: `{}`).
 */
export function writeKubeconfig(
  dir: string,
  server: string,
  cluster: readonly string[],
  user: readonly string[],
): string {
  const file = path.join(dir, `kubeconfig-${Math.random().toString(36).slice(2)}`);
  writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- cluster:',
      `    server: ${server}`,
      ...cluster.map((l) => `    ${l}`),
      '  name: default',
      'contexts:',
      '- context:',
      '    cluster: default',
      '    user: default',
      '  name: default',
      'current-context: default',
      'users:',
      '- name: default',
      '  user:',
      ...(user.length ? user.map((l) => `    ${l}`) : ['    {}']),
      '',
    ].join('\n'),
  );
  return file;
}

/** The `user` lines of an exec credential plugin: node running `script`. */
export function execPluginUser(script: string): string[] {
  return [
    'exec:',
    '  apiVersion: client.authentication.k8s.io/v1',
    `  command: ${process.execPath}`,
    '  args:',
    `  - ${script}`,
    '  interactiveMode: Never',
  ];
}
