import { Test } from '@nestjs/testing';
import {
  InvalidArgumentError,
  Locked,
  Redlock,
  RedlockModule,
  RedlockModuleOptions,
  UnknownOptionError,
} from '../../lib';
import { countingNodes } from './helpers';

/**
 * How an options object is read (docs/DESIGN.md §11): own keys only, each value once; `__proto__`,
 * `constructor` and `prototype` keys (JSON) refused by name; unknown keys refused with the nearest known one;
 * options inherited from a prototype refused; getters and Proxy traps that throw refused as such — everywhere
 * options are taken, before any Redis traffic.
 */
describe('options objects are read once, from their own keys', () => {
  const nodes = countingNodes();
  const redlock = new Redlock(nodes, { logger: false });
  afterEach(() => expect(nodes.map((node) => node.calls)).toEqual([0, 0, 0]));
  afterAll(() => redlock.quit());

  /** A @Locked method defined with `options`, as TypeScript's decorator call does it. */
  const decorate = (options: unknown) => {
    class Service {
      async work() {
        return 1;
      }
    }
    const descriptor = Object.getOwnPropertyDescriptor(Service.prototype, 'work')!;
    Locked('r', options as never)(Service.prototype, 'work', descriptor as never);
  };

  /** Every place that takes options, each given `options` (whose other keys fit there). */
  const places: [string, (options: unknown) => unknown][] = [
    ['new Redlock()', (options) => new Redlock(countingNodes(), options as never)],
    ['acquire()', (options) => redlock.acquire('r', options as never)],
    ['tryAcquire()', (options) => redlock.tryAcquire('r', options as never)],
    ['using()', (options) => redlock.using('r', options as never, async () => 1)],
    ['@Locked', decorate],
    [
      'RedlockModule.forRoot()',
      (options) => RedlockModule.forRoot(['redis://127.0.0.1:1'], options as never),
    ],
  ];

  /** The refusal `call(options)` throws or rejects with. */
  async function refusal(call: (options: unknown) => unknown, options: unknown): Promise<Error> {
    try {
      await call(options);
    } catch (error) {
      return error as Error;
    }
    throw new Error('accepted');
  }

  describe.each(places)('%s', (_, call) => {
    it.each(['__proto__', 'constructor', 'prototype'])(
      'a "%s" key from JSON is refused by name, saying where it comes from and what to do',
      async (key) => {
        const options = JSON.parse(`{ "ttl": 5000, "${key}": { "ttl": 1 } }`) as object;
        const error = await refusal(call, options);
        expect(error).toBeInstanceOf(InvalidArgumentError);
        expect(error.message).toMatch(
          new RegExp(`option key "${key}" is refused: it is not an option, and .*remove "${key}" there`),
        );
      },
    );

    it('a misspelt key is refused with the nearest known one and the list', async () => {
      const error = await refusal(call, { tll: 5000 });
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect(error.message).toMatch(/Unknown .*option "tll" \(did you mean "ttl"\?\)\. Known ones: ttl, /);
    });

    it('an option inherited from a prototype would be ignored: refused, naming it', async () => {
      const error = await refusal(call, Object.create({ ttl: 5000 }));
      expect(error.message).toMatch(
        /option "ttl" is inherited from the prototype .* would be ignored\. Put it on the object itself/,
      );
    });

    it('a getter that throws is refused as such, not passed on as its own error', async () => {
      const error = await refusal(call, {
        get ttl(): number {
          throw new RangeError('no config yet');
        },
      });
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect(error.message).toMatch(
        /option "ttl" could not be read: its getter \(or a Proxy trap\) threw \(RangeError: no config yet\)/,
      );
    });

    it('a Proxy whose traps throw is refused as such', async () => {
      const hostile = new Proxy(
        {},
        {
          ownKeys() {
            throw new Error('trap');
          },
        },
      );
      const error = await refusal(call, hostile);
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect(error.message).toMatch(/options could not be read: listing its keys threw \(Error: trap\)/);
    });

    it('an array is not an options object', async () => {
      const error = await refusal(call, [5000]);
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect(error.message).toMatch(/options must be an object like \{ ttl: 5000.*\}, got an array/);
    });
  });

  it('a getter is read once: the value checked is the value used', async () => {
    let reads = 0;
    const lock = await redlock.acquire('once', {
      get ttl() {
        reads++;
        return reads === 1 ? 5_000 : -1;
      },
    });
    expect(reads).toBe(1);
    expect(lock.ttl).toBe(5_000);
    nodes.forEach((node) => (node.calls = 0));
  });

  it('negative controls: a null-prototype object and a class instance with its options as fields are read', async () => {
    const bare = Object.assign(Object.create(null) as object, { ttl: 4_000 });
    class CallOptions {
      ttl = 3_000;
      describe() {
        return 'a method on the prototype is not an option';
      }
    }
    expect((await redlock.acquire('bare', bare)).ttl).toBe(4_000);
    expect((await redlock.acquire('instance', new CallOptions())).ttl).toBe(3_000);
    expect(new Redlock(countingNodes(), new CallOptions()).options.ttl).toBe(3_000);
    nodes.forEach((node) => (node.calls = 0));
  });

  it('holders(), revoke() and lead() refuse a __proto__ key from JSON too', async () => {
    const json = (text: string) => JSON.parse(text) as never;
    await expect(redlock.holders(json('{ "limit": 5, "__proto__": {} }'))).rejects.toThrow(
      /holders\(\) option key "__proto__" is refused/,
    );
    await expect(redlock.revoke('r', json('{ "reason": "x", "__proto__": {} }'))).rejects.toThrow(
      /revoke\(\) option key "__proto__" is refused/,
    );
    await expect(redlock.lead('r', async () => 1, json('{ "__proto__": {} }'))).rejects.toThrow(
      /lead\(\) option key "__proto__" is refused/,
    );
  });

  it('the logger: a getter that throws is refused at construction, not at the first warning', () => {
    const logger = {
      get warn(): never {
        throw new Error('not configured');
      },
    };
    expect(() => new Redlock(countingNodes(), { logger })).toThrow(
      /logger could not be read: reading its warn or debug method threw \(Error: not configured\)/,
    );
    expect(() => new Redlock(countingNodes(), { logger: null as never })).toThrow(
      /logger must be false or an object with a warn\(message\) method .*got null\. Leave it out for console\.warn/,
    );
  });

  it('the logger is called on the object given (this), its methods read once', () => {
    const lines: string[] = [];
    class Sink {
      prefix = 'sink:';
      warn(message: string) {
        lines.push(this.prefix + message);
      }
    }
    new Redlock(countingNodes().slice(0, 2), { logger: new Sink() });
    expect(lines).toEqual([expect.stringMatching(/^sink:2 nodes: an even count/)]);
  });
});

describe('RedlockModule: a __proto__ key from JSON', () => {
  it('forRoot refuses it before Nest copies the options (whose copy dropped it silently)', () => {
    const options = JSON.parse('{ "ttl": 5000, "__proto__": { "ttl": 1 } }') as object;
    const call = () => RedlockModule.forRoot(['redis://127.0.0.1:1'], options);
    expect(call).toThrow(InvalidArgumentError);
    expect(call).toThrow(
      /^Invalid RedlockModule options: RedlockModule option key "__proto__" is refused: it is not an option/,
    );
  });

  it('forRootAsync: in what the factory returns, at start-up, with the same message', async () => {
    const options = JSON.parse('{ "nodes": ["redis://127.0.0.1:1"], "constructor": {} }') as object;
    const error = await Test.createTestingModule({
      imports: [RedlockModule.forRootAsync({ useFactory: () => options as RedlockModuleOptions })],
    })
      .compile()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toMatch(
      /^Invalid RedlockModule options: RedlockModule option key "constructor" is refused/,
    );
  });

  it('an unknown key: one list of what the module accepts, refused by forRoot already', () => {
    let error: unknown;
    try {
      RedlockModule.forRoot(['redis://127.0.0.1:1'], { shutdownTimout: 1 } as never);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toMatch(
      /^Invalid RedlockModule options: Unknown RedlockModule option "shutdownTimout" \(did you mean "shutdownTimeout"\?\)\. Known ones: ttl, .*, nodes, connectTimeout, shutdownTimeout, busyFilter\.$/,
    );
  });

  it('UnknownOptionError keeps its fields where the core refuses on its own', () => {
    let error: unknown;
    try {
      new Redlock(countingNodes(), { tll: 1 } as never);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(UnknownOptionError);
    expect((error as UnknownOptionError).suggestion).toBe('ttl');
  });
});
