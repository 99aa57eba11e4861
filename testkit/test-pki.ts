/**
 * A throw-away PKI for tests, made with the openssl CLI (node has no X.509 issuing API): a
 * CA, a server certificate for the fake API server (serverAuth, the given IPs and names as
 * subject alternative names) and a client certificate (clientAuth), both signed by the CA.
 * P-256 keys: quick to make in the TCG guest.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface TestPki {
  readonly dir: string;
  readonly caFile: string;
  readonly serverCertFile: string;
  readonly serverKeyFile: string;
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
  /** PEM text of each */
  readonly ca: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
}

export interface TestPkiOptions {
  /** default 127.0.0.1 and ::1 */
  readonly ips?: readonly string[];
  /** default localhost */
  readonly names?: readonly string[];
  /** the client certificate's subject CN (default kube-ipvs) */
  readonly clientName?: string;
  /** the client certificate's subject O, the Kubernetes group (default system:nodes) */
  readonly clientOrganization?: string;
  /** the CA's and the server certificate's subject CN (defaults fake-apiserver-ca, fake-apiserver) */
  readonly caName?: string;
  readonly serverName?: string;
}

function openssl(args: readonly string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Writes ca.crt, server.{crt,key} and client.{crt,key} into `dir` (made if missing); an existing set is reused. */
export function makeTestPki(dir: string, options: TestPkiOptions = {}): TestPki {
  mkdirSync(dir, { recursive: true });
  const f = (name: string) => path.join(dir, name);
  if (!existsSync(f('client.crt'))) {
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    const serial = () => ['-set_serial', `0x${randomBytes(8).toString('hex')}`];
    openssl(
      [
        'req',
        '-x509',
        ...ec,
        '-keyout',
        'ca.key',
        '-out',
        'ca.crt',
        '-days',
        '3650',
        '-subj',
        `/CN=${options.caName ?? 'fake-apiserver-ca'}`,
        '-addext',
        'basicConstraints=critical,CA:TRUE',
        '-addext',
        'keyUsage=critical,keyCertSign,cRLSign',
      ],
      dir,
    );
    const ips = options.ips ?? ['127.0.0.1', '::1'];
    const names = options.names ?? ['localhost'];
    const san = [...ips.map((ip) => `IP:${ip}`), ...names.map((n) => `DNS:${n}`)].join(',');
    writeFileSync(
      f('server.ext'),
      `subjectAltName=${san}\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\nbasicConstraints=CA:FALSE\n`,
    );
    writeFileSync(
      f('client.ext'),
      'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\nbasicConstraints=CA:FALSE\n',
    );
    openssl(
      [
        'req',
        ...ec,
        '-keyout',
        'server.key',
        '-out',
        'server.csr',
        '-subj',
        `/CN=${options.serverName ?? 'fake-apiserver'}`,
      ],
      dir,
    );
    openssl(
      [
        'x509',
        '-req',
        '-in',
        'server.csr',
        '-CA',
        'ca.crt',
        '-CAkey',
        'ca.key',
        ...serial(),
        '-days',
        '3650',
        '-extfile',
        'server.ext',
        '-out',
        'server.crt',
      ],
      dir,
    );
    openssl(
      [
        'req',
        ...ec,
        '-keyout',
        'client.key',
        '-out',
        'client.csr',
        '-subj',
        `/O=${options.clientOrganization ?? 'system:nodes'}/CN=${options.clientName ?? 'kube-ipvs'}`,
      ],
      dir,
    );
    openssl(
      [
        'x509',
        '-req',
        '-in',
        'client.csr',
        '-CA',
        'ca.crt',
        '-CAkey',
        'ca.key',
        ...serial(),
        '-days',
        '3650',
        '-extfile',
        'client.ext',
        '-out',
        'client.crt',
      ],
      dir,
    );
  }
  const read = (name: string) => readFileSync(f(name), 'utf8');
  return {
    dir,
    caFile: f('ca.crt'),
    serverCertFile: f('server.crt'),
    serverKeyFile: f('server.key'),
    clientCertFile: f('client.crt'),
    clientKeyFile: f('client.key'),
    ca: read('ca.crt'),
    serverCert: read('server.crt'),
    serverKey: read('server.key'),
    clientCert: read('client.crt'),
    clientKey: read('client.key'),
  };
}
