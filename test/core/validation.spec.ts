import { inspect } from 'node:util';
import { InvalidArgumentError, Redlock } from '../../lib';
import { CountingNode, countingNodes } from './helpers';

describe('bad input gets a clear error before any Redis traffic', () => {
  it.each([
    ['no nodes', [], {}, /nodes must be a non-empty array/],
    [
      'nodes not an array (nor redis:// URLs separated by commas)',
      'localhost:1',
      {},
      /nodes must be a non-empty array/,
    ],
    ['a node of the wrong type', [42], {}, /nodes\[0\] must be a connection string/],
    ['a string that is not a redis URL', ['localhost:6379'], {}, /must be a redis:\/\/ or rediss:\/\/ URL/],
    ['ttl zero', null, { ttl: 0 }, /ttl must be a positive whole number/],
    ['ttl fractional', null, { ttl: 1.5 }, /ttl must be a positive whole number/],
    ['ttl as a string', null, { ttl: '1000' }, /ttl must be a positive whole number.*"1000" \(a string\)/],
    ['ttl too short for the drift allowance', null, { ttl: 5 }, /too short/],
    ['driftFactor negative', null, { driftFactor: -0.1 }, /driftFactor must be a number in \[0, 0.5\)/],
    ['driftFactor 0.5', null, { driftFactor: 0.5 }, /driftFactor/],
    ['negative wait', null, { wait: -1 }, /wait must be a number of milliseconds ≥ 0 or Infinity/],
    [
      'fractional nodeTimeout (DESIGN §11: whole ms but for the wait budget)',
      null,
      { nodeTimeout: 2.5 },
      /nodeTimeout must be a positive whole.*got 2\.5.*Math\.ceil\(2\.5\)/,
    ],
    ['fractional retryDelay', null, { retryDelay: 0.5 }, /retryDelay must be a whole number/],
    ['NaN wait', null, { wait: NaN }, /wait must be/],
    ['negative nodeTimeout', null, { nodeTimeout: -5 }, /nodeTimeout must be a positive whole number/],
    ['negative retryDelay', null, { retryDelay: -1 }, /retryDelay must be a whole number/],
    ['maxRetryDelay below retryDelay', null, { retryDelay: 100, maxRetryDelay: 10 }, /maxRetryDelay \(10\)/],
    ['keyPrefix not a string', null, { keyPrefix: 7 }, /keyPrefix must be a string/],
    ['a misspelt option', null, { ttL: 1000 }, /Unknown Redlock option "ttL"/],
    ['a logger without warn()', null, { logger: {} }, /logger must be false or an object/],
  ])('constructor: %s', (_, nodes, options, message) => {
    const make = () => new Redlock((nodes ?? countingNodes()) as never, options as never);
    expect(make).toThrow(InvalidArgumentError);
    expect(make).toThrow(message);
  });

  it('refuses the same node twice, however it is spelt', () => {
    expect(
      () => new Redlock(['redis://localhost:6390', 'redis://127.0.0.1:6390/2'], { logger: false }),
    ).toThrow(/nodes\[1\] and nodes\[0\] are the same node/);
    const node = new CountingNode('x:1');
    expect(() => new Redlock([node, node])).toThrow(/same node/);
  });

  describe('calls', () => {
    const nodes = countingNodes();
    const redlock = new Redlock(nodes, { logger: false });
    afterEach(() => {
      expect(nodes.map((n) => n.calls)).toEqual([0, 0, 0]);
    });

    it.each([
      ['an empty list', [], /resources must not be empty/],
      ['an empty resource', '', /every resource must be a non-empty string/],
      ['a non-string resource', ['a', 3], /every resource must be a non-empty string, got 3/],
      ['a duplicate resource', ['a', 'b', 'a'], /resource "a" is listed twice/],
      ['undefined', undefined, /resources must be a string or an array of strings/],
      ['an object', { id: 1 }, /resources must be a string or an array of strings, got an object/],
    ])('acquire() with %s', async (_, resources, message) => {
      await expect(redlock.acquire(resources as never)).rejects.toThrow(message);
      await expect(redlock.tryAcquire(resources as never)).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(redlock.using(resources as never, async () => 1)).rejects.toBeInstanceOf(
        InvalidArgumentError,
      );
    });

    it.each([
      [{ ttl: -1 }, /ttl must be a positive whole number/],
      [{ wait: -5 }, /wait must be a number of milliseconds ≥ 0/],
      [{ tll: 5 }, /Unknown acquire option "tll"/],
      ['fast', /acquire options must be an object/],
    ])('acquire() with options %p', async (options, message) => {
      await expect(redlock.acquire('r', options as never)).rejects.toThrow(message);
    });

    it('using() without a function', async () => {
      await expect(redlock.using('r', {} as never)).rejects.toThrow(/needs a function/);
    });

    it('extend() and release() with something that is not a lock', async () => {
      await expect(redlock.release({ resources: ['r'] } as never)).rejects.toThrow(
        /needs a Lock returned by acquire/,
      );
      await expect(redlock.extend(null as never)).rejects.toThrow(/needs a Lock returned by acquire/);
    });
  });

  it('extend() with a bad ttl is refused before traffic', async () => {
    const nodes = countingNodes();
    const redlock = new Redlock(nodes, { logger: false });
    const lock = await redlock.acquire('r');
    const before = nodes.map((n) => n.calls);
    await expect(redlock.extend(lock, 0)).rejects.toThrow(/ttl must be a positive whole number/);
    expect(nodes.map((n) => n.calls)).toEqual(before);
  });
});

describe('a refusal prints as its message', () => {
  it('no `resources: [], votes: []` beside it (still readable as properties)', () => {
    let error: unknown;
    try {
      new Redlock(['redis://127.0.0.1:1'], { ttl: -1, logger: false });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(InvalidArgumentError);
    const printed = inspect(error);
    expect(printed).toMatch(/^InvalidArgumentError: ttl must be a positive whole number of milliseconds/);
    expect(printed).not.toMatch(/resources: \[\]|votes: \[\]/);
    expect((error as InvalidArgumentError).resources).toEqual([]);
    expect((error as InvalidArgumentError).votes).toEqual([]);
  });
});
