import { createClient } from 'redis';
import { Redlock } from '../../lib';
import { RedisNodes, freePort, startRedisNodes } from '../support';
import { TlsFiles, makeTlsFiles } from '../support/tls-certs';

/**
 * TLS: three real redis-server nodes that also listen on a TLS port (certificates from a CA this test makes),
 * reached by the library over TLS only — `rediss://` URLs for the failure case, ioredis options with the CA for
 * the working one.
 */
describe('TLS (3 real redis-server nodes, self-signed CA)', () => {
  let tls: TlsFiles;
  const sets: RedisNodes[] = [];
  const tlsPorts: number[] = [];

  beforeAll(async () => {
    tls = makeTlsFiles();
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      tlsPorts.push(port);
      sets.push(
        await startRedisNodes(1, {
          extraArgs: [
            '--tls-port',
            String(port),
            '--tls-cert-file',
            tls.serverCert,
            '--tls-key-file',
            tls.serverKey,
            '--tls-ca-cert-file',
            tls.caCert,
            '--tls-auth-clients',
            'no',
          ],
        }),
      );
    }
  });
  afterAll(async () => {
    for (const set of sets) await set.stop();
  });

  it('locks over TLS with the CA given in the node options (the scripts ran on the servers)', async () => {
    const redlock = new Redlock(
      tlsPorts.map((port) => ({ host: '127.0.0.1', port, tls: { ca: tls.caPem } })),
      { restartGuard: false, logger: false },
    );
    try {
      const states = await redlock.connect(3_000);
      expect(states.every((state) => state.ready)).toBe(true);
      const lock = await redlock.acquire('tls:1', { fencing: true });
      expect(lock.fencingToken).toBeGreaterThan(0);
      await redlock.extend(lock);
      const result = await redlock.release(lock);
      expect((await result.settled).releasedOn).toBe(3);
    } finally {
      await redlock.quit();
    }
    // The plain-port admin reads what the TLS clients did: the script ran there, over the TLS port.
    const admin = sets[0].nodes[0].redis();
    const stats = await admin.info('commandstats');
    const clients = await admin.info('clients');
    await admin.quit();
    expect(stats).toMatch(/cmdstat_evalsha:calls=\d+|cmdstat_eval:calls=\d+/);
    expect(clients).toMatch(/connected_clients:\d+/);
  });

  it('negative control: rediss:// without the CA fails verification, as an error vote, not a crash', async () => {
    const redlock = new Redlock(
      tlsPorts.map((port) => `rediss://127.0.0.1:${port}`),
      { restartGuard: false, logger: false, wait: 0 },
    );
    try {
      const states = await redlock.connect(1_500);
      expect(states.every((state) => !state.ready)).toBe(true);
      expect(states[0].error?.message).toMatch(/certificate|self.signed|verify/i);
      await expect(redlock.acquire('tls:2')).rejects.toThrow(/Could not lock "tls:2"/);
    } finally {
      await redlock.quit();
    }
  });

  it('node-redis clients over TLS (rediss:// with the CA in socket options), passed in and created by the library', async () => {
    const clients = tlsPorts.map((port) =>
      createClient({ url: `rediss://127.0.0.1:${port}`, socket: { tls: true, ca: tls.caPem } }).on(
        'error',
        () => undefined,
      ),
    );
    const passed = new Redlock(clients, { restartGuard: false, logger: false });
    const created = new Redlock(
      tlsPorts.map((port) => ({ url: `rediss://127.0.0.1:${port}`, socket: { tls: true, ca: tls.caPem } })),
      { restartGuard: false, logger: false, client: 'node-redis' },
    );
    try {
      for (const redlock of [passed, created]) {
        const states = await redlock.connect(3_000);
        expect(states.every((state) => state.ready)).toBe(true);
        const lock = await redlock.acquire('tls:nr', { fencing: true });
        expect(lock.fencingToken).toBeGreaterThan(0);
        const result = await redlock.release(lock);
        expect((await result.settled).releasedOn).toBe(3);
      }
    } finally {
      await Promise.all([passed.quit(), created.quit()]);
      clients.forEach((client) => void client.destroy());
    }
  });
});
