import { InvalidArgumentError, Redlock, UnknownOptionError } from '../../lib';

/**
 * Where a node is, checked when the instance is made (docs/DESIGN.md §11): a bad port or host used to reach
 * ioredis as it was — `TypeError: Invalid URL` from deep inside, '6379x' read as 6379, port 0 or a
 * 'host:port' host leaving a node that is only "not connected" at the first lock. Each refusal names the
 * node's position, the field, the rule and the fix; the same server listed twice is refused too.
 */
describe('node addresses are checked at construction', () => {
  /** The refusal `new Redlock(specs)` throws (an instance it makes anyway is closed and fails the test). */
  function refusal(specs: unknown[]): Error {
    try {
      void new Redlock(specs as never, { logger: false }).quit(0);
    } catch (error) {
      return error as Error;
    }
    throw new Error(`accepted: ${String(specs)}`);
  }

  const URL_FORM =
    /Fix it in the URL: redis:\/\/\[username:password@\]host:port\[\/db\] \(rediss:\/\/ for TLS\)/;

  it.each([
    ['redis://127.0.0.1:0', 'got 0'],
    ['redis://127.0.0.1:70000', 'got 70000'],
    ['redis://127.0.0.1:6379x', 'got 6379x'],
    ['redis://127.0.0.1:-1', 'got -1'],
  ])('a URL with a bad port (%s): refused naming the node, the rule and the fix', (url, got) => {
    const error = refusal(['redis://127.0.0.1:7001', url]);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error.message).toContain(
      `nodes[1] (${url}): the port must be a whole number from 1 to 65535, ${got}.`,
    );
    expect(error.message).toMatch(URL_FORM);
  });

  it.each([
    ['redis://:6379', /nodes\[0\] \(redis:\/\/:6379\): the URL has no host\. Write it as redis:\/\//],
    [
      'redis://10.0.0.1:6379/orders',
      /the path "\/orders" is not a database number: .* \(redis:\/\/10\.0\.0\.1:6379\/2\)/,
    ],
    ['redis://[::1:6379', /nodes\[0\] \(redis:\/\/\[::1:6379\): not a valid URL\. Write it as/],
  ])('a URL without a host, with a path that is no database, or malformed: %s', (url, message) => {
    const error = refusal([url]);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error.message).toMatch(message);
  });

  it('a misspelt option in the URL query is refused like one in an options object', () => {
    const error = refusal(['redis://10.0.0.1:6379?pasword=x']);
    expect(error).toBeInstanceOf(UnknownOptionError);
    expect(error.message).toMatch(
      /^Unknown ioredis option in the query of nodes\[0\] "pasword" \(did you mean "password"\?\)/,
    );
  });

  it('a password in the URL is never printed', () => {
    for (const url of [
      'redis://user:s3cret@10.0.0.1:70000',
      'redis://:s3cret@:6379',
      'redis://h:0?password=s3cret',
    ]) {
      const { message } = refusal([url]);
      expect(message).not.toContain('s3cret');
      expect(message).toContain('***');
    }
  });

  it.each([
    [
      { port: 0 },
      /^nodes\[0\]\.port must be a whole number from 1 to 65535, got 0\. Example: \{ host: '10\.0\.0\.1', port: 6379 \}\.$/,
    ],
    [{ port: 70000 }, /nodes\[0\]\.port must be .*got 70000\./],
    [{ port: '6379x' }, /nodes\[0\]\.port must be .*got "6379x" \(a string\)\./],
    [{ port: -1 }, /nodes\[0\]\.port must be .*got -1\./],
    [{ port: NaN }, /nodes\[0\]\.port must be .*got NaN\./],
    [{ port: 6379.5 }, /nodes\[0\]\.port must be .*got 6379\.5\./],
    [{ port: null }, /nodes\[0\]\.port must be .*got null\./],
    [{ port: [6379] }, /nodes\[0\]\.port must be .*got an array\./],
    [
      { host: 5 },
      /^nodes\[0\]\.host must be a host name or IP address \(a non-empty string\), got 5\. Example/,
    ],
    [{ host: '' }, /nodes\[0\]\.host must be a host name .*got "" \(a string\)/],
    [{ host: { name: 'a' } }, /nodes\[0\]\.host must be a host name .*got an object/],
    [
      { host: '10.0.0.1:6380' },
      /nodes\[0\]\.host "10\.0\.0\.1:6380" holds a port: .*Give them apart: \{ host: '10\.0\.0\.1', port: 6380 \}/,
    ],
    [
      { host: 'redis://10.0.0.1' },
      /nodes\[0\]\.host "redis:\/\/10\.0\.0\.1" is a URL, not a host: pass the URL itself/,
    ],
    [{ host: 'redis .internal' }, /nodes\[0\]\.host "redis \.internal" holds whitespace/],
    [
      { db: -1 },
      /nodes\[0\]\.db must be a database number, a whole number ≥ 0, got -1\. Example: \{ db: 0 \}/,
    ],
    [{ db: 'orders' }, /nodes\[0\]\.db must be a database number/],
    [{ path: '' }, /nodes\[0\]\.path must be the path of a Unix socket/],
    [
      { sentinels: [], name: 'mymaster' },
      /nodes\[0\]\.sentinels must be a non-empty array .*got an empty array/,
    ],
    [
      { sentinels: [{ host: '10.0.0.1', port: 70000 }], name: 'mymaster' },
      /nodes\[0\]\.sentinels\[0\]\.port must be .*got 70000\. Example: \{ host: '10\.0\.0\.1', port: 26379 \}/,
    ],
    [
      { sentinels: ['10.0.0.1:26379'], name: 'mymaster' },
      /nodes\[0\]\.sentinels\[0\] must be \{ host, port \}/,
    ],
  ])('ioredis options %j: refused naming the field, the rule and the fix', (options, message) => {
    const error = refusal([options]);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error.message).toMatch(message);
  });

  it('ioredis options are read as every options object is: no __proto__ key, getters that throw named', () => {
    expect(refusal([JSON.parse('{ "port": 7001, "__proto__": { "host": "10.0.0.9" } }')]).message).toMatch(
      /^ioredis option in nodes\[0\] key "__proto__" is refused/,
    );
    const hostile = {
      port: 7001,
      get host(): string {
        throw new Error('vault sealed');
      },
    };
    expect(refusal([hostile]).message).toMatch(
      /ioredis option in nodes\[0\] "host" could not be read: its getter \(or a Proxy trap\) threw \(Error: vault sealed\)/,
    );
  });

  it('the same server twice at one literal address is refused, saying why: two votes', () => {
    for (const pair of [
      ['redis://127.0.0.1:7001', 'redis://127.0.0.1:7001'],
      ['redis://localhost:7001', 'redis://127.0.0.1:7001'],
      ['redis://localhost.:7001', { host: 'LOCALHOST', port: 7001 }],
      ['redis://[::1]:7001', { port: '7001' }],
      [{ host: '10.0.0.1', port: 7001 }, 'redis://10.0.0.1:7001/3'],
      // Other spellings of one address: IPv4 shorthand and hex, IPv4-mapped IPv6, an uncompressed IPv6.
      ['redis://127.1:7001', 'redis://127.0.0.1:7001'],
      ['redis://[::ffff:127.0.0.1]:7001', 'redis://127.0.0.1:7001'],
      [{ host: '0x7f.0.0.1', port: 7001 }, 'redis://localhost:7001'],
      ['redis://[fe80:0:0:0:0:0:0:1]:7001', { host: 'fe80::1', port: 7001 }],
      ['redis://10.1:7001', 'redis://10.0.0.1:7001'],
    ]) {
      const error = refusal(['redis://127.0.0.1:7002', ...pair]);
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect(error.message).toMatch(
        /^nodes\[2\] and nodes\[1\] are the same node \(.*\): one server would hold two votes, so a lock held there and on one other node would look like a majority\. .*list each Redis server once/,
      );
    }
  });

  it('negative controls: well-formed addresses are taken as they are', async () => {
    const redlock = new Redlock(
      [
        'redis://127.0.0.1:7011/2',
        'redis://user:pw@[::2]:7012?connectTimeout=500',
        // From an environment variable: digits, read by ioredis' parseInt.
        { host: '10.0.0.1', port: '7013' as unknown as number },
        { host: 'fe80::1', port: 7014 },
        { path: '/tmp/redis.sock' },
        { sentinels: [{ host: '10.0.0.2', port: 26379 }], name: 'mymaster', lazyConnect: true },
        'redis://localhost.localdomain:7015',
      ],
      { logger: false },
    );
    expect(redlock.nodes).toHaveLength(7);
    await redlock.quit(0);
  });
});
