import { Test } from '@nestjs/testing';
import { InvalidArgumentError, Locked, Redlock, RedlockModule, RedlockModuleOptions } from '../../lib';
import { countingNodes } from './helpers';

/**
 * Every option of the constructor, of a call, of @Locked and of RedlockModule, given every kind of wrong value
 * (docs/DESIGN.md §11): each is refused with an InvalidArgumentError that names the option, the rule, what
 * was given and the fix — never a TypeError from further in, never accepted.
 */

const revoked = Proxy.revocable({}, {});
revoked.revoke();
const trap = () => {
  throw new Error('trap');
};
/** A Proxy whose every trap throws: reading, listing, asking its prototype. */
const hostileProxy = new Proxy({}, { get: trap, getPrototypeOf: trap, ownKeys: trap, has: trap });

/** The wrong values, by label; each option lists the labels it accepts. */
const VALUES: Record<string, unknown> = {
  NaN: NaN,
  Infinity: Infinity,
  '-Infinity': -Infinity,
  '-1': -1,
  '1.5': 1.5,
  '2**60': 2 ** 60,
  "'1000'": '1000',
  "'true'": 'true',
  "''": '',
  null: null,
  '[1000]': [1000],
  '{}': {},
  true: true,
  '() => 1000': () => 1000,
  'Symbol()': Symbol('x'),
  '10n': 10n,
  '{ valueOf }': { valueOf: () => 1000 },
  'a Proxy that throws': hostileProxy,
  'a revoked Proxy': revoked.proxy,
};

/** Option → the labels it accepts (left out of its rows). */
const INSTANCE_OPTIONS: Record<string, string[]> = {
  ttl: [],
  driftFactor: [],
  nodeTimeout: [],
  wait: ['Infinity', '1.5'],
  retryDelay: [],
  maxRetryDelay: [],
  keyPrefix: ["'1000'", "'true'", "''"],
  fencing: ['true'],
  restartGuard: ['true'],
  autoExtend: ['true'],
  onLockLost: [],
  logger: [],
  owner: ["'1000'", "'true'"],
};
const CALL_OPTIONS: Record<string, string[]> = {
  ttl: [],
  wait: ['Infinity', '1.5'],
  fencing: ['true'],
  permits: [],
  mode: [],
  signal: [],
  autoExtend: ['true'],
  onLockLost: [],
};
const LOCKED_OPTIONS: Record<string, string[]> = {
  onBusy: [],
  oncePerTick: ['true'],
  ttl: [],
  wait: ['Infinity', '1.5'],
};
const MODULE_OPTIONS: Record<string, string[]> = {
  nodes: [],
  logger: [],
  connectTimeout: [],
  shutdownTimeout: [],
};

/** The rows of one table: [option, label] for every wrong value. */
const rows = (options: Record<string, string[]>): [string, string][] =>
  Object.entries(options).flatMap(([option, accepted]) =>
    Object.keys(VALUES)
      .filter((label) => !accepted.includes(label))
      .map((label): [string, string] => [option, label]),
  );

/** What every refusal must say: the option, the value given, the rule and a fix. */
function expectClearRefusal(error: unknown, option: string): void {
  expect(error).toBeInstanceOf(InvalidArgumentError);
  const { message } = error as Error;
  expect(message).toContain(option);
  expect(message).toMatch(/\bgot\b|could not be read|of -?\d+(\.\d+)? ms is/);
  expect(message).toMatch(/must|is too short|is beyond|is longer than|could not be read/);
  expect(message).toMatch(
    /Example|Default|Leave it out|usual value|Pass |Use |use at least|convert|the default is/i,
  );
}

describe('every wrong option value is refused, naming the option, the rule and the fix', () => {
  const nodes = countingNodes();
  const redlock = new Redlock(nodes, { logger: false });
  afterEach(() => expect(nodes.map((node) => node.calls)).toEqual([0, 0, 0]));
  afterAll(() => redlock.quit());

  it.each(rows(INSTANCE_OPTIONS))('new Redlock({ %s: %s })', (option, label) => {
    let error: unknown;
    try {
      new Redlock(countingNodes(), { [option]: VALUES[label] });
    } catch (caught) {
      error = caught;
    }
    expectClearRefusal(error, option);
  });

  it.each(rows(CALL_OPTIONS))('using(r, { %s: %s }, fn)', async (option, label) => {
    const options = { [option]: VALUES[label] };
    const error = await redlock.using('r', options, async () => 1).catch((e: unknown) => e);
    expectClearRefusal(error, option);
    if (option in { ttl: 1, wait: 1, fencing: 1, permits: 1, mode: 1, signal: 1 }) {
      expectClearRefusal(await redlock.acquire('r', options).catch((e: unknown) => e), option);
    }
  });

  it.each(rows(MODULE_OPTIONS))('RedlockModule { %s: %s }', async (option, label) => {
    const options = { nodes: ['redis://127.0.0.1:1'], logger: false, [option]: VALUES[label] };
    const error = await Test.createTestingModule({
      imports: [RedlockModule.forRootAsync({ useFactory: () => options as RedlockModuleOptions })],
    })
      .compile()
      .catch((e: unknown) => e);
    expectClearRefusal(error, option);
    expect((error as Error).message).toMatch(/^Invalid RedlockModule options: /);
  });

  it.each(rows(LOCKED_OPTIONS))('@Locked(key, { %s: %s }), when the class is defined', (option, label) => {
    let error: unknown;
    try {
      class Service {
        async work() {
          return 1;
        }
      }
      const descriptor = Object.getOwnPropertyDescriptor(Service.prototype, 'work')!;
      Locked('r', { [option]: VALUES[label] })(Service.prototype, 'work', descriptor as never);
    } catch (caught) {
      error = caught;
    }
    expectClearRefusal(error, option);
    expect((error as Error).message).toMatch(/^@Locked on Service\.work: /);
  });

  it.each(Object.keys(VALUES).filter((label) => label !== 'true'))(
    'RedlockModule.forRoot(nodes, { busyFilter: %s })',
    (label) => {
      let error: unknown;
      try {
        RedlockModule.forRoot(['redis://127.0.0.1:1'], { busyFilter: VALUES[label] as boolean });
      } catch (caught) {
        error = caught;
      }
      expectClearRefusal(error, 'busyFilter');
    },
  );

  it('text that looks like the right value says how to convert it', async () => {
    expect(() => new Redlock(countingNodes(), { nodeTimeout: '250' as never })).toThrow(
      /nodeTimeout must be a positive whole number of milliseconds, got "250" \(a string\)\. It is text that looks like a number .*convert it with Number\(\)\. Default: 50\./,
    );
    expect(() => new Redlock(countingNodes(), { fencing: 'true' as never })).toThrow(
      /fencing must be true or false, got "true" \(a string\)\. It is text .*value === 'true'\. Default: false\./,
    );
    await expect(redlock.acquire('r', { permits: '3' as never })).rejects.toThrow(
      /permits must be .*got "3" \(a string\)\. It is text that looks like a number/,
    );
  });

  it('nodes whose entries throw when read are refused as such, naming the entry', () => {
    expect(() => new Redlock([hostileProxy] as never, { logger: false })).toThrow(
      /^nodes\[0\] could not be used: Error: trap \(thrown while reading it or making its client\)\. Pass a redis:\/\/ URL/,
    );
    const list = new Proxy(['redis://127.0.0.1:1'], { get: trap });
    expect(() => new Redlock(list, { logger: false })).toThrow(
      /^nodes could not be read: Error: trap \(a getter or Proxy trap threw\)\. Pass a plain array/,
    );
  });

  it('the relations between options say which to change', () => {
    expect(() => new Redlock(countingNodes(), { retryDelay: 500, maxRetryDelay: 100 })).toThrow(
      'maxRetryDelay (100) must not be smaller than retryDelay (500): raise maxRetryDelay or lower retryDelay',
    );
    expect(() => new Redlock(countingNodes(), { keyPrefix: 'app:{}' })).toThrow(/contains "\{" or "\}"/);
  });

  it('a signal that only looks like one (made from its prototype) is refused, not failed on later', async () => {
    const lookalike = Object.create(AbortSignal.prototype) as AbortSignal;
    expect(lookalike).toBeInstanceOf(AbortSignal); // what an instanceof check alone would have taken
    const error = await redlock.acquire('r', { signal: lookalike }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toMatch(
      /signal must be an AbortSignal, got an object\. Pass controller\.signal of an AbortController/,
    );
  });

  it('negative controls: the same options with good values are taken', async () => {
    const instance = new Redlock(countingNodes(), {
      ttl: 2 ** 40,
      driftFactor: 0,
      nodeTimeout: 1,
      wait: Infinity,
      retryDelay: 0,
      maxRetryDelay: 0,
      keyPrefix: '',
      fencing: true,
      restartGuard: 0,
      autoExtend: false,
      onLockLost: 'warn',
      logger: { warn: () => undefined },
      owner: 'worker-1',
    });
    expect(instance.options.ttl).toBe(2 ** 40);
    const lock = await redlock.acquire('ok', {
      ttl: 10,
      wait: 1.5,
      fencing: false,
      permits: 1,
      mode: 'write',
      signal: AbortSignal.timeout(1_000),
    });
    expect(lock.ttl).toBe(10);
    nodes.forEach((node) => (node.calls = 0));
  });
});
