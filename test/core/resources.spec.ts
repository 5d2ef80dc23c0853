import { InvalidArgumentError, Redlock } from '../../lib';
import { fenceKey, lockKey, normalizeResources } from '../../lib/core/resources';
import { compileLockKey } from '../../lib/locked/lock-key';
import { Prng } from '../safety/sim/prng';

/** A seeded generator (the simulation's), so a failure can be replayed. */
function prng(seed: number): () => number {
  const rng = new Prng(seed);
  return () => rng.next();
}

/** CRC16-XMODEM of the bytes, as Redis Cluster computes it. */
function crc16(bytes: Buffer): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** The Redis Cluster slot of a key: the hash tag (first `{` to the next `}`, when not empty), else the key. */
function slotOf(key: string): number {
  const bytes = Buffer.from(key);
  const open = bytes.indexOf('{');
  if (open >= 0) {
    const close = bytes.indexOf('}', open + 1);
    if (close > open + 1) return crc16(bytes.subarray(open + 1, close)) % 16384;
  }
  return crc16(bytes) % 16384;
}

/** A random string, biased towards the characters that matter for keys (lone surrogates included). */
function randomResource(random: () => number, maxLength = 5, otherShare = 0.3): string {
  const pieces = [
    'a',
    '}',
    '{',
    ':',
    '\u00e9',
    'e\u0301',
    '\ufffd',
    '\u{1f600}',
    '\u{10ffff}',
    '\0',
    ' ',
    '%',
    // Lone surrogates: they must be refused, or they would collide (as U+FFFD) with each other.
    '\uD800',
    '\uDBFF',
    '\uDC00',
  ];
  let text = '';
  const length = 1 + Math.floor(random() * maxLength);
  for (let i = 0; i < length; i++) {
    text +=
      random() >= otherShare
        ? pieces[Math.floor(random() * pieces.length)]
        : String.fromCodePoint(Math.floor(random() * 0xd800)); // BMP below the surrogates
  }
  return text;
}

const allowed = (resource: string): boolean => {
  try {
    normalizeResources(resource);
    return true;
  } catch {
    return false;
  }
};

describe('resources that are not well-formed Unicode are refused', () => {
  it.each(['\uD800', '\uDBFF', 'order:\uDC00', 'a\uD83D', '\uDE00\uD83D'])('%j', (resource) => {
    expect(() => normalizeResources(resource)).toThrow(InvalidArgumentError);
    expect(() => normalizeResources(resource)).toThrow(
      /is not well-formed Unicode: it has a lone UTF-16 surrogate/,
    );
    expect(() => normalizeResources(['ok', resource])).toThrow(
      /lone UTF-16 surrogate \(U\+D[89A-F][0-9A-F]{2} at/,
    );
  });

  it('the two lone surrogates of the issue would have shared one key as bytes', () => {
    // Why: both are encoded as U+FFFD.
    expect(Buffer.from(lockKey('p:', '\uD800')).equals(Buffer.from(lockKey('p:', '\uDBFF')))).toBe(true);
  });

  it('surrogate pairs (astral characters) are fine', () => {
    expect(normalizeResources('\u{1F600}:\u{10FFFF}')).toEqual(['\u{1F600}:\u{10FFFF}']);
  });

  it('a @Locked template rendering a lone surrogate is refused by the same check', () => {
    const rendered = compileLockKey('order:<0>', 'Orders.pay').render(['\uD800']);
    expect(() => normalizeResources(rendered)).toThrow(/not well-formed Unicode/);
  });

  it('distinct accepted resources give distinct keys as bytes (property, 20,000 random strings)', () => {
    const random = prng(14);
    const byBytes = new Map<string, string>();
    const collisions: string[][] = [];
    let checked = 0;
    for (let i = 0; i < 20_000; i++) {
      // Short strings from few characters: near-misses (such as two lone surrogates in one place) are common.
      const resource = randomResource(random, 3, 0.1);
      if (!allowed(resource)) continue;
      checked++;
      for (const key of [lockKey('redlock:', resource), fenceKey('redlock:', resource)]) {
        const bytes = Buffer.from(key).toString('hex');
        const earlier = byBytes.get(bytes);
        if (earlier !== undefined && earlier !== key) collisions.push([earlier, key]);
        byBytes.set(bytes, key);
      }
    }
    expect(collisions).toEqual([]);
    // Not vacuous: many distinct resources were checked.
    expect(checked).toBeGreaterThan(5_000);
    expect(byBytes.size).toBeGreaterThan(5_000);
  });
});

describe('the {resource} hash tag cannot be escaped', () => {
  it.each(['}x', '}', '}}', '}{a}'])('%j is refused, explaining the hash tag', (resource) => {
    expect(() => normalizeResources(resource)).toThrow(InvalidArgumentError);
    expect(() => normalizeResources(resource)).toThrow(
      /starts with "}".*Redis Cluster hash tag would be empty/,
    );
  });

  it("'}x' would have put its lock and fence keys in different slots", () => {
    expect(slotOf(lockKey('redlock:', '}x'))).not.toBe(slotOf(fenceKey('redlock:', '}x')));
  });

  it('a keyPrefix with a brace is refused: two prefixes could otherwise give one key to two resources', () => {
    expect(() => new Redlock([], { keyPrefix: 'app{}:' })).toThrow(
      /keyPrefix "app\{\}:" contains "\{" or "\}"/,
    );
    // 'a{x}' + '{y}' and 'a' + '{x}{y}' are the same key: refused whichever brace the prefix holds.
    for (const keyPrefix of ['a{x}', 'a{x', 'a}x']) {
      expect(() => new Redlock([], { keyPrefix })).toThrow(/contains "\{" or "\}"/);
    }
    // Negative control: a prefix without braces is taken.
    expect(() => new Redlock([], { keyPrefix: 'a:x:' })).not.toThrow(/keyPrefix/);
  });

  it('for every accepted resource, the lock and fence keys share a slot (property, several prefixes)', () => {
    const random = prng(5);
    const split: string[][] = [];
    let checked = 0;
    for (const prefix of ['redlock:', '', 'app{', 'x}', 'a{b}:', '{']) {
      for (let i = 0; i < 5_000; i++) {
        const resource = randomResource(random);
        if (!allowed(resource)) continue;
        checked++;
        const [lock, fence] = [lockKey(prefix, resource), fenceKey(prefix, resource)];
        if (slotOf(lock) !== slotOf(fence)) split.push([prefix, resource]);
      }
    }
    expect(split).toEqual([]);
    expect(checked).toBeGreaterThan(15_000);
  });

  it('slotOf agrees with Redis on known keys', () => {
    // Values from the Redis Cluster specification and CLUSTER KEYSLOT.
    expect(crc16(Buffer.from('123456789'))).toBe(0x31c3);
    expect(slotOf('foo')).toBe(12182);
    expect(slotOf('{user1000}.following')).toBe(slotOf('{user1000}.followers'));
  });
});
