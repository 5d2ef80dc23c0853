import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { removeOnExit } from './exit-cleanup';

/** A self-signed CA and a server certificate it signed for 127.0.0.1, made with openssl for one test file. */
export interface TlsFiles {
  readonly dir: string;
  readonly caCert: string;
  readonly serverCert: string;
  readonly serverKey: string;
  /** The CA certificate's PEM text (what a client passes as `tls.ca`). */
  readonly caPem: string;
}

export function makeTlsFiles(): TlsFiles {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nestjs-redlock-tls-'));
  removeOnExit(dir);
  const at = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=nestjs-redlock test CA',
    '-keyout',
    at('ca.key'),
    '-out',
    at('ca.crt'),
  );
  openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=127.0.0.1',
    '-keyout',
    at('server.key'),
    '-out',
    at('server.csr'),
  );
  fs.writeFileSync(at('san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl(
    'x509',
    '-req',
    '-in',
    at('server.csr'),
    '-CA',
    at('ca.crt'),
    '-CAkey',
    at('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    at('san.ext'),
    '-out',
    at('server.crt'),
  );
  return {
    dir,
    caCert: at('ca.crt'),
    serverCert: at('server.crt'),
    serverKey: at('server.key'),
    caPem: fs.readFileSync(at('ca.crt'), 'utf8'),
  };
}
