import { Redis } from 'ioredis';
import { Redlock, UnknownOptionError } from '../../lib';
import { editDistance, nearestName } from '../../lib/core/nearest';

describe('ioredis option objects in nodes: unknown keys are refused', () => {
  const refused = (specs: unknown[]) => {
    try {
      new Redlock(specs as never, { logger: false }).quit();
    } catch (error) {
      return error as UnknownOptionError;
    }
    throw new Error('accepted');
  };

  it('{ hots } would silently have locked on localhost: refused, naming the key and the near one', () => {
    const error = refused([{ hots: '10.0.0.5', port: 7000 }]);
    expect(error).toBeInstanceOf(UnknownOptionError);
    expect(error.option).toBe('hots');
    expect(error.suggestion).toBe('host');
    expect(error.message).toMatch(/^Unknown ioredis option in nodes\[0\] "hots" \(did you mean "host"\?\)\./);
  });

  it.each([
    ['prot', 'port'],
    ['pasword', 'password'],
    ['lazyconnect', 'lazyConnect'],
    ['conectTimeout', 'connectTimeout'],
  ])('%s → did you mean %s', (key, near) => {
    const error = refused(['redis://127.0.0.1:7001', { host: '127.0.0.1', port: 7002, [key]: 1 }]);
    expect(error.message).toContain(`nodes[1] "${key}" (did you mean "${near}"?)`);
  });

  it('a key near nothing gets no guess, only the list of known keys', () => {
    const error = refused([{ host: '127.0.0.1', xyzzy: true }]);
    expect(error.suggestion).toBeUndefined();
    expect(error.message).toMatch(/"xyzzy"\. Known ones: .*\bport\b.*\bhost\b/);
  });

  it('every option ioredis itself has a default for is known, and so are the address and TLS keys', () => {
    const defaults = Object.keys((Redis as unknown as { defaultOptions: object }).defaultOptions);
    expect(defaults.length).toBeGreaterThan(20);
    const options = Object.fromEntries(defaults.map((key) => [key, undefined]));
    const redlock = new Redlock(
      [
        {
          ...options,
          host: '127.0.0.1',
          port: 7003,
          path: undefined,
          tls: undefined,
          db: 1,
          lazyConnect: true,
        },
      ],
      { logger: false },
    );
    return redlock.quit();
  });

  it('edit distance counts an adjacent swap as one edit', () => {
    expect(editDistance('hots', 'host')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(nearestName('tll', ['ttl', 'wait'])).toBe('ttl');
    expect(nearestName('ab', ['xy'])).toBeUndefined();
  });
});

describe('nodes as one comma-separated string (an environment variable, as dev-redis prints it)', () => {
  it('is split into its URLs, spaces and a trailing comma ignored', async () => {
    const redlock = new Redlock('redis://127.0.0.1:7101, redis://127.0.0.1:7102,redis://127.0.0.1:7103,', {
      logger: false,
    });
    try {
      expect(redlock.nodes.map((node) => node.name)).toEqual([
        '127.0.0.1:7101',
        '127.0.0.1:7102',
        '127.0.0.1:7103',
      ]);
    } finally {
      await redlock.quit(0);
    }
  });

  it('another string is still refused, with the forms nodes may take', () => {
    expect(() => new Redlock('127.0.0.1:7101' as never, { logger: false })).toThrow(
      /nodes must be a non-empty array .*or one string of redis:\/\/ URLs separated by commas/,
    );
  });
});
