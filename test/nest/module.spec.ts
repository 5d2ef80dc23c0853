import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import {
  InvalidArgumentError,
  Locked,
  RedlockModule,
  RedlockModuleOptions,
  RedlockOptionsFactory,
  RedlockService,
} from '../../lib';
import { RedisNodes, freePort, startTcpProxy, useRedisNodes } from '../support';
import {
  RecordingLogger,
  TEST_OPTIONS,
  clientsOnNodes,
  closeApp,
  closeApps,
  createApp,
  keyOf,
  valuesOnNodes,
} from './helpers';

/** Holds a lock through the app's service and checks it landed on every node, then releases it. */
async function lockRoundTrip(nodes: RedisNodes, service: RedlockService, resource: string) {
  const lock = await service.acquire(resource);
  expect(await valuesOnNodes(nodes, keyOf(resource))).toEqual([lock.value, lock.value, lock.value]);
  await service.release(lock);
  expect(await valuesOnNodes(nodes, keyOf(resource))).toEqual([null, null, null]);
  return lock;
}

/**
 * A node nobody listens on. ioredis waits `disconnectTimeout` (2 s by default) before it gives up on a
 * socket that never connected, so a short one keeps that timer from outliving the test.
 */
const deadNode = (port: number) => ({ host: '127.0.0.1', port, disconnectTimeout: 50 });

describe('RedlockModule (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterEach: closeApps });

  it('forRoot(nodes, options): locks on the real nodes with the given defaults', async () => {
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, { ...TEST_OPTIONS, ttl: 4_321 })],
    });
    const lock = await lockRoundTrip(nodes, app.get(RedlockService), 'forRoot');
    expect(lock.ttl).toBe(4_321);
  });

  describe('forRootAsync', () => {
    @Injectable()
    class AppConfig {
      readonly redlock: RedlockModuleOptions = { ...TEST_OPTIONS, nodes: [], ttl: 1_234 };
    }
    @Module({ providers: [AppConfig], exports: [AppConfig] })
    class ConfigModule {}

    @Injectable()
    class RedlockConfig implements RedlockOptionsFactory {
      static nodes: string[] = [];
      createRedlockOptions(): RedlockModuleOptions {
        return { ...TEST_OPTIONS, nodes: RedlockConfig.nodes, ttl: 2_345 };
      }
    }
    @Module({ providers: [RedlockConfig], exports: [RedlockConfig] })
    class RedlockConfigModule {}

    beforeAll(() => {
      RedlockConfig.nodes = nodes.urls;
    });

    it('useFactory with imports and inject', async () => {
      const app = await createApp({
        imports: [
          RedlockModule.forRootAsync({
            imports: [ConfigModule],
            inject: [AppConfig],
            useFactory: async (config: AppConfig) => ({ ...config.redlock, nodes: nodes.urls }),
          }),
        ],
      });
      expect((await lockRoundTrip(nodes, app.get(RedlockService), 'factory')).ttl).toBe(1_234);
    });

    it('useClass', async () => {
      const app = await createApp({ imports: [RedlockModule.forRootAsync({ useClass: RedlockConfig })] });
      expect((await lockRoundTrip(nodes, app.get(RedlockService), 'class')).ttl).toBe(2_345);
    });

    it('useExisting (the factory provided by an imported module)', async () => {
      const app = await createApp({
        imports: [RedlockModule.forRootAsync({ imports: [RedlockConfigModule], useExisting: RedlockConfig })],
      });
      expect((await lockRoundTrip(nodes, app.get(RedlockService), 'existing')).ttl).toBe(2_345);
    });

    it('refuses, when called, what it cannot build options from: each naming what to pass', () => {
      class NoFactory {}
      const cases: [unknown, RegExp][] = [
        [{}, /none of useFactory, useClass or useExisting was given/],
        [
          { useFactory: () => ({}), useClass: RedlockConfig },
          /give only one of useFactory, useClass and useExisting/,
        ],
        [{ useFactory: { nodes: [] } }, /useFactory must be a function/],
        [{ useClass: NoFactory }, /useClass .* has no createRedlockOptions\(\) method/],
        [undefined, /expected an options object/],
      ];
      for (const [options, problem] of cases) {
        const call = () => RedlockModule.forRootAsync(options as never);
        expect(call).toThrow(InvalidArgumentError);
        expect(call).toThrow(problem);
        expect(call).toThrow(
          /Pass \{ useFactory: .*createRedlockOptions\(\) returning \{ nodes, \.\.\.options \}/,
        );
      }
    });
  });

  it('is global: a feature module uses RedlockService and @Locked without importing it', async () => {
    @Injectable()
    class Reports {
      constructor(readonly redlock: RedlockService) {}
      @Locked('report:<0>')
      async build(name: string) {
        return this.redlock.current()?.resources;
      }
    }
    @Module({ providers: [Reports], exports: [Reports] })
    class ReportsModule {}

    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, TEST_OPTIONS), ReportsModule],
    });
    expect(await app.get(Reports).build('daily')).toEqual(['report:daily']);
  });

  it('leaves ready-made clients open and closes the ones it created', async () => {
    const [n0, n1, n2] = nodes.nodes;
    const userClient = new Redis({ host: n0.host, port: n0.port, connectionName: 'user-client' });
    // The clients the module creates reach nodes 1 and 2 through proxies, where each is seen to close.
    const proxies = await Promise.all([startTcpProxy(n1.port), startTcpProxy(n2.port)]);
    try {
      const before = await clientsOnNodes(nodes);
      const app = await createApp({
        imports: [
          RedlockModule.forRoot(
            [
              userClient,
              { host: '127.0.0.1', port: proxies[0].port, connectionName: 'module-owned' },
              proxies[1].url,
            ],
            TEST_OPTIONS,
          ),
        ],
      });
      await lockRoundTrip(nodes, app.get(RedlockService), 'mixed');
      const during = await clientsOnNodes(nodes);
      expect(during[0]).toContain('user-client');
      expect(during[1]).toContain('module-owned');
      // The lock client it created and that client's subscriber (revocations, release announcements).
      expect(during[2].length).toBe(before[2].length + 2);

      await closeApp(app);
      expect(userClient.status).toBe('ready');
      expect(await userClient.ping()).toBe('PONG');
      // Each connection it created closed, and its node let go of it (the proxy forgets a connection ended
      // cleanly once the node ended its side too): the nodes list none of them.
      await Promise.all(proxies.map((proxy) => proxy.drained()));
      const after = await clientsOnNodes(nodes);
      expect(after[1]).not.toContain('module-owned');
      expect(after[2].length).toBe(before[2].length);
      expect(after[0]).toContain('user-client');
    } finally {
      userClient.disconnect();
      await Promise.all(proxies.map((proxy) => proxy.close()));
    }
  });

  it('boots with an unreachable node, warns about it, and still locks with the majority', async () => {
    const logger = new RecordingLogger();
    const deadPort = await freePort();
    const app = await createApp({
      imports: [
        RedlockModule.forRoot([nodes.urls[0], nodes.urls[1], deadNode(deadPort)], {
          ...TEST_OPTIONS,
          logger,
          connectTimeout: 1_000,
        }),
      ],
    });
    const warnings = logger.messages('warn');
    expect(warnings).toEqual([expect.stringContaining(`127.0.0.1:${deadPort} is not reachable`)]);
    expect(warnings[0]).toContain('Locks need 2 of 3 nodes');
    expect(logger.lines.every((line) => line.context === 'Redlock')).toBe(true);

    const lock = await app.get(RedlockService).acquire('majority', { wait: 0 });
    expect(lock.remainingTime).toBeGreaterThan(0);
    await app.get(RedlockService).release(lock);
  });

  it('fresh nodes: warns once at start-up that the restart guard refuses locks, until when, and the option', async () => {
    const logger = new RecordingLogger();
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, { ...TEST_OPTIONS, logger, restartGuard: 600_000 })],
    });
    const warnings = logger.messages('warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /started recently \(or restarted\): the restart guard makes them refuse locks until about \d{4}-/,
    );
    expect(warnings[0]).toContain('set restartGuard: false');
    const refused = await app
      .get(RedlockService)
      .acquire('fresh', { wait: 0 })
      .catch((e: unknown) => e);
    expect((refused as Error).message).toContain('restart guard');
  });

  it('no such warning when the guard is off', async () => {
    const logger = new RecordingLogger();
    await createApp({ imports: [RedlockModule.forRoot(nodes.urls, { ...TEST_OPTIONS, logger })] });
    expect(logger.messages('warn')).toEqual([]);
  });

  it('busyFilter that is not a boolean is refused when the module is assembled', () => {
    expect(() => RedlockModule.forRoot(nodes.urls, { busyFilter: 'no' as unknown as boolean })).toThrow(
      'Invalid RedlockModule options: busyFilter must be true or false, got "no" (a string). Default: true',
    );
  });

  it('a busyFilter returned by a forRootAsync factory is refused with where it goes', async () => {
    const error = await Test.createTestingModule({
      imports: [
        RedlockModule.forRootAsync({
          useFactory: () => ({ nodes: nodes.urls, busyFilter: false }) as unknown as RedlockModuleOptions,
        }),
      ],
    })
      .compile()
      .catch((e: unknown) => e);
    expect((error as Error).message).toContain('pass it beside useFactory');
  });

  it('a __proto__ key in module options is refused by name', async () => {
    const options = JSON.parse(`{ "__proto__": { "ttl": 1 } }`) as object;
    const error = await Test.createTestingModule({
      imports: [RedlockModule.forRootAsync({ useFactory: () => ({ nodes: nodes.urls, ...options }) })],
    })
      .compile()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toContain('"__proto__"');
  });

  it('RedlockModule imported twice in one application: one warning', async () => {
    const logger = new RecordingLogger();
    @Module({ imports: [RedlockModule.forRoot(nodes.urls, { ...TEST_OPTIONS, logger })] })
    class Feature {}
    await createApp({ imports: [RedlockModule.forRoot(nodes.urls, { ...TEST_OPTIONS, logger }), Feature] });
    expect(logger.messages('warn')).toEqual([
      expect.stringContaining('RedlockModule is imported more than once'),
    ]);
  });

  it("two entries reaching one server under other names (0.0.0.0 beside 127.0.0.1): warned through Nest's logger", async () => {
    // The same literal address twice is refused when the module is built; an alias is known by its run_id.
    const logger = new RecordingLogger();
    const port = new URL(nodes.urls[0]).port;
    await createApp({
      imports: [
        RedlockModule.forRoot([nodes.urls[0], `redis://0.0.0.0:${port}`, nodes.urls[1]], {
          ...TEST_OPTIONS,
          logger,
        }),
      ],
    });
    expect(logger.lines).toContainEqual({
      level: 'warn',
      context: 'Redlock',
      message: expect.stringMatching(
        /^nodes\[0\] \(127\.0\.0\.1:\d+\) and nodes\[1\] \(0\.0\.0\.0:\d+\) are the same Redis server \(same run_id\): it holds two votes/,
      ),
    });
  });

  it('warns that locking will fail when no majority is reachable', async () => {
    const logger = new RecordingLogger();
    const dead = [deadNode(await freePort()), deadNode(await freePort())];
    await createApp({
      imports: [
        RedlockModule.forRoot([nodes.urls[0], ...dead], { ...TEST_OPTIONS, logger, connectTimeout: 1_000 }),
      ],
    });
    expect(logger.messages('warn').at(-1)).toMatch(
      /Only 1 of 3 Redis nodes are reachable: every lock will fail until 2 are/,
    );
  });

  describe('refuses bad options at start-up, with a clear message', () => {
    const compile = (options: object) =>
      Test.createTestingModule({
        imports: [RedlockModule.forRootAsync({ useFactory: () => options as RedlockModuleOptions })],
      }).compile();

    it.each([
      [{ ttl: -1 }, /Invalid RedlockModule options: ttl must be a positive whole number/],
      [
        { shutdownTimeout: -5 },
        /Invalid RedlockModule options: shutdownTimeout must be a whole number of milliseconds ≥ 0, got -5/,
      ],
      [{ connectTimeout: 'soon' }, /connectTimeout must be a positive whole number .* got "soon"/],
      [{ logger: 'console' }, /logger must be false or a Nest LoggerService/],
      [
        { ttll: 5_000 },
        /Unknown RedlockModule option "ttll" \(did you mean "ttl"\?\)\. Known ones: ttl, .*, nodes, connectTimeout, shutdownTimeout, busyFilter\./,
      ],
    ])('%j', async (options, message) => {
      const error = await compile({ nodes: nodes.urls, ...options }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect((error as Error).message).toMatch(message);
    });

    it('nodes missing (a factory returning the wrong thing)', async () => {
      await expect(compile({ ttl: 1_000 })).rejects.toThrow(/`nodes` is missing: list the Redis nodes/);
      await expect(compile([] as never)).rejects.toThrow(/expected an object like \{ nodes:/);
    });

    it('nodes not usable', async () => {
      await expect(compile({ nodes: ['localhost:6379'] })).rejects.toThrow(
        /Invalid RedlockModule options: nodes\[0\] must be a redis:\/\/ or rediss:\/\/ URL/,
      );
    });
  });

  it('an application without RedlockModule fails at start-up, naming the class, the method and the fix', async () => {
    @Injectable()
    class Orders {
      @Locked('order:<0>')
      async pay(id: string) {
        return id;
      }
    }
    const error = await Test.createTestingModule({ providers: [Orders] })
      .compile()
      .catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/Nest can't resolve dependencies of the Orders/);
    expect((error as Error).message).toContain(
      'LockedSections for @Locked Orders.pay (import RedlockModule.forRoot() or forRootAsync() in the root module)',
    );
  });
});
