import {
  compileLockKey,
  CompiledLockKey,
  InvalidLockKeyError,
  LockKeySource,
} from '../../lib/locked/lock-key';

const WHERE = 'OrdersService.pay';

function render(source: LockKeySource, args: readonly unknown[], declaredParams?: number): string[] {
  return compileLockKey(source, WHERE, declaredParams).render(args);
}

function one(template: string, ...args: unknown[]): string {
  const keys = render(template, args);
  expect(keys).toHaveLength(1);
  return keys[0];
}

/** Runs `fn`, expects an InvalidLockKeyError, returns its message. */
function errorOf(fn: () => unknown): string {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(InvalidLockKeyError);
  const error = thrown as InvalidLockKeyError;
  expect(error.name).toBe('InvalidLockKeyError');
  expect(error).toBeInstanceOf(Error);
  return error.message;
}

function compileError(source: LockKeySource, declaredParams?: number): string {
  return errorOf(() => compileLockKey(source, WHERE, declaredParams));
}

function renderError(source: LockKeySource, args: readonly unknown[]): string {
  const compiled = compileLockKey(source, WHERE);
  return errorOf(() => compiled.render(args));
}

// ------------------------------------------------------------------------------- injectivity checker

type Tuple = readonly unknown[];
type Renderer = (args: Tuple) => string;

/** The documented identity of a value in a key: its text (strings as-is, String() for the rest). */
const canonical = (tuple: Tuple): string => JSON.stringify(tuple.map((v) => String(v)));

/** First pair of tuples with different texts but the same key, or undefined. */
function findCollision(
  renderer: Renderer,
  tuples: readonly Tuple[],
): { key: string; a: string; b: string } | undefined {
  const seen = new Map<string, string>();
  for (const tuple of tuples) {
    const key = renderer(tuple);
    const id = canonical(tuple);
    const previous = seen.get(key);
    if (previous === undefined) seen.set(key, id);
    else if (previous !== id) return { key, a: previous, b: id };
  }
  return undefined;
}

/** mulberry32: a small seeded PRNG so failures reproduce. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Small alphabet full of separators and escape look-alikes, so near-collisions are frequent. */
const PIECES = [
  'a',
  'b',
  ':',
  '%',
  '%3A',
  '3A',
  '<',
  '>',
  '{',
  '}',
  '-',
  '.',
  '/',
  'é',
  '😀',
  '1',
  'e',
  '+',
  ' ',
];

function randomTuples(seed: number, count: number, arity: number): Tuple[] {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const value = (): unknown => {
    const r = random();
    if (r < 0.7) {
      let s = '';
      const length = Math.floor(random() * 4); // includes ''
      for (let i = 0; i < length; i++) s += pick(PIECES);
      return s;
    }
    if (r < 0.85) return pick([0, 1, -1, 1.5, -0.5, 10, 1e21, 1e-7, 42, 0.1]);
    if (r < 0.93) return pick([0n, 1n, -1n, 42n, 10n ** 30n]);
    return random() < 0.5;
  };
  const tuples: Tuple[] = [];
  for (let i = 0; i < count; i++) tuples.push(Array.from({ length: arity }, value));
  return tuples;
}

const arityOf = (template: string): number =>
  Math.max(...[...template.matchAll(/<(\d+)>/g)].map((m) => +m[1])) + 1;

describe('compileLockKey — rendering', () => {
  it('renders the common case readably', () => {
    expect(one('order:<0>', '42')).toBe('order:42');
    expect(one('order:<0>', 42)).toBe('order:42');
    expect(one('user:<0>:cart', 'alice')).toBe('user:alice:cart');
    expect(one('order:<0>', 'c0ffee-42_x.y@example.com')).toBe('order:c0ffee-42_x.y@example.com');
    expect(one('order:<0>', 'zażółć 😀')).toBe('order:zażółć 😀');
  });

  it('reads property paths, own and inherited', () => {
    expect(one('order:<1.id>', 'ignored', { id: 'o-1' })).toBe('order:o-1');
    expect(one('user:<0.user.id>', { user: { id: 7 } })).toBe('user:7');
    class Base {
      get tenant(): string {
        return 'acme';
      }
    }
    expect(one('t:<0.tenant>', new Base())).toBe('t:acme');
    expect(one('len:<0.length>', 'abcd')).toBe('len:4');
    expect(one('n:<0.x>', Object.assign(Object.create(null) as object, { x: 'y' }))).toBe('n:y');
    expect(one('$:<0.$_a1>', { $_a1: 'ok' })).toBe('$:ok');
  });

  it('renders several placeholders, repeated placeholders and constants', () => {
    expect(one('<0>:<1>:<0>', 'a', 'b')).toBe('a:b:a');
    expect(one('report:nightly')).toBe('report:nightly');
    expect(one('transfer:<0.from>->><1>', { from: 'x-' }, 'y>')).toBe('transfer:x%2D->y>');
  });

  it('renders numbers, bigints and booleans as their canonical text, equal to the same string', () => {
    expect(one('k:<0>', -1.5)).toBe('k:-1.5');
    expect(one('k:<0>', -0)).toBe('k:0');
    expect(one('k:<0>', 10n ** 20n)).toBe('k:100000000000000000000');
    expect(one('k:<0>', true)).toBe('k:true');
    // Same text, same resource: pay('42') from HTTP and pay(42) from a cron must share the lock.
    expect(one('order:<0>', 42)).toBe(one('order:<0>', '42'));
    expect(one('order:<0>', 42n)).toBe(one('order:<0>', '42'));
  });

  it('escapes %, : and braces in values, and never lets a value create a hash tag', () => {
    expect(one('order:<0>', 'a:b')).toBe('order:a%3Ab');
    expect(one('order:<0>', '100%')).toBe('order:100%25');
    expect(one('order:<0>', '%3A')).toBe('order:%253A');
    expect(one('order:<0>', '{x}')).toBe('order:%7Bx%7D');
    const key = one('{orders}:<0>', '{evil}');
    expect(key).toBe('{orders}:%7Bevil%7D');
    expect(key.indexOf('{', 1)).toBe(-1); // the user's own tag is the only '{'
  });

  it('escapes the separator that follows a placeholder, and only where needed', () => {
    expect(one('<0>-<1>', 'a-b', 'c')).toBe('a%2Db-c');
    expect(one('<0>-<1>', 'a', 'b-c')).toBe('a-b%2Dc');
    expect(one('id:<0>', 'uuid-with-dashes')).toBe('id:uuid-with-dashes');
    expect(one('<0>/<1>', -1, '1/2')).toBe('-1/1%2F2');
  });

  it('keeps the collision pairs from the peers apart', () => {
    expect(one('<0>:<1>', 'a:b', 'c')).not.toBe(one('<0>:<1>', 'a', 'b:c'));
    expect(one('<0>-<1>', 'a-b', 'c')).not.toBe(one('<0>-<1>', 'a', 'b-c'));
    expect(one('<0>.<1>', 'a.b', 'c')).not.toBe(one('<0>.<1>', 'a', 'b.c'));
    expect(one('<0>:x:<1>', 'a:x', 'b')).not.toBe(one('<0>:x:<1>', 'a', 'x:b'));
    expect(one('order:<0>', 'x:lines')).not.toBe(one('order:<0>:lines', 'x'));
    expect(one('<0>:<1>', '', 'a')).not.toBe(one('<0>:<1>', 'a', ''));
  });

  it('supports literal < and > written as << and >>', () => {
    expect(one('a<<<0>>>', 'x')).toBe('a<x>');
    expect(one('<<0>>')).toBe('<0>');
    expect(one('<0>>><1>', 'a>b', 'c')).toBe('a%3Eb>c');
  });

  it('never produces undefined, null or [object Object]', () => {
    const values: unknown[] = [undefined, null, {}, { toString: () => 'x' }, [], [1], new Date(0), () => 1];
    for (const value of values) {
      expect(() => render('order:<0>', [value])).toThrow(InvalidLockKeyError);
    }
  });

  it('returns a fresh array per call and exposes the templates', () => {
    const compiled: CompiledLockKey = compileLockKey('order:<0>', WHERE, 1);
    const first = compiled.render(['1']);
    first.push('mutated');
    expect(compiled.render(['1'])).toEqual(['order:1']);
    expect(compiled.templates).toEqual(['order:<0>']);
    expect(Object.isFrozen(compiled.templates)).toBe(true);
  });
});

describe('compileLockKey — rendering errors name the method, the placeholder and what was found', () => {
  it('refuses a missing argument', () => {
    const message = renderError('order:<1>', ['a']);
    expect(message).toContain(WHERE);
    expect(message).toContain('<1>');
    expect(message).toContain('argument 1, which is undefined');
    expect(message).toContain('called with 1 argument)');
    expect(renderError('order:<0>', [null])).toContain('which is null');
  });

  it('refuses undefined and null leaves', () => {
    const message = renderError('order:<1.id>', ['x', {}]);
    expect(message).toContain(WHERE);
    expect(message).toContain('<1.id> is undefined');
    expect(renderError('order:<0.id>', [{ id: null }])).toContain('<0.id> is null');
  });

  it('names the exact missing segment of a path', () => {
    const message = renderError('user:<0.user.id>', [{}]);
    expect(message).toContain(WHERE);
    expect(message).toContain("<0.user.id> cannot read 'id' because <0.user> is undefined");
    expect(renderError('x:<0.a.b.c>', [{ a: { b: null } }])).toContain(
      "<0.a.b.c> cannot read 'c' because <0.a.b> is null",
    );
  });

  it('refuses objects and arrays with a hint', () => {
    const message = renderError('order:<1>', ['x', { id: 1 }]);
    expect(message).toContain(WHERE);
    expect(message).toContain('<1> is an object; use a property path like <1.id> or a key function');
    expect(message).not.toContain('[object Object]');
    expect(renderError('order:<0.items>', [{ items: [1] }])).toContain('<0.items> is an array');
    expect(renderError('order:<0.items>', [{ items: [1] }])).toContain('<0.items.id>');
  });

  it('refuses NaN, Infinity, symbols and functions', () => {
    expect(renderError('k:<0>', [NaN])).toContain('<0> is NaN; only finite numbers');
    expect(renderError('k:<0>', [-Infinity])).toContain('<0> is -Infinity');
    expect(renderError('k:<0>', [Symbol('s')])).toContain('<0> is a symbol');
    expect(renderError('k:<0.toString>', [{}])).toContain('<0.toString> is a function');
  });

  it('refuses an empty key and an overlong key', () => {
    expect(renderError('<0>', [''])).toContain('rendered an empty key');
    expect(one('k:<0>', 'x'.repeat(1022))).toHaveLength(1024);
    expect(renderError('k:<0>', ['x'.repeat(1023)])).toContain('1025 characters long');
    expect(renderError('k:<0>', [':'.repeat(400)])).toContain('1202 characters long'); // counted after escaping
  });

  it('lets a throwing getter propagate unchanged', () => {
    const boom = new Error('boom');
    const arg = {
      get id(): string {
        throw boom;
      },
    };
    expect(() => render('k:<0.id>', [arg])).toThrow(boom);
  });
});

describe('compileLockKey — compile-time errors', () => {
  const cases: Array<[string, number, string]> = [
    ['order:<>', 7, 'expected an argument index'],
    ['order:<a>', 7, 'expected an argument index'],
    ['order:<-1>', 7, 'expected an argument index'],
    ['order:<01>', 7, 'leading zero'],
    ['order:<0.>', 9, 'expected a property name'],
    ['order:<0..x>', 9, 'expected a property name'],
    ['order:<0.1x>', 9, 'expected a property name'],
    ['order:<0', 6, 'unclosed placeholder'],
    ['order:<0.id', 6, 'unclosed placeholder'],
    ['order:<0 >', 8, "expected a digit, '.' or '>'"],
    ['order:<0.a-b>', 10, "expected '.' or '>'"],
    ['order:0>', 7, "stray '>'"],
    ['order:<0>>', 9, "stray '>'"],
    ['<<0>', 3, "stray '>'"],
    ['order:<0.__proto__>', 9, "'__proto__' is not allowed"],
    ['order:<0.constructor>', 9, "'constructor' is not allowed"],
    ['order:<0.a.prototype>', 11, "'prototype' is not allowed"],
    ['k:<99999999999999999999>', 3, 'too large'],
  ];
  it.each(cases)('%s fails at position %i: %s', (template, position, expected) => {
    const message = compileError(template);
    expect(message).toContain(WHERE);
    expect(message).toContain(`'${template}'`);
    expect(message).toContain(expected);
    expect(message).toContain(`at position ${position}`);
    // The caret line points at the same position.
    const lines = message.split('\n');
    const caret = lines.find((line) => line.trim() === '^');
    expect(caret?.indexOf('^')).toBe(2 + position);
  });

  it('refuses adjacent placeholders and separators the encoding could produce', () => {
    const adjacent = compileError('<0><1>');
    expect(adjacent).toContain('<0> and <1> are separated by nothing at position 3');
    expect(compileError('<0>x<1>')).toContain("separated by 'x'");
    expect(compileError('<0>A<1>')).toContain("separated by 'A'");
    expect(compileError('<0>7<1>')).toContain("separated by '7'");
    expect(compileError('<0>%<1>')).toContain("separated by '%'");
    expect(compileError('<0>é:<1>')).toContain("separated by 'é'");
    // Any ASCII punctuation but % works, including an escaped < or >.
    for (const template of ['<0>:<1>', '<0>/<1>', '<0>|<1>', '<0>_<1>', '<0>#<1>', '<0><<<1>', '<0>>><1>']) {
      expect(() => compileLockKey(template, WHERE)).not.toThrow();
    }
    // The text after the last placeholder needs no separator.
    expect(one('<0>xyz', 'a')).toBe('axyz');
  });

  it('refuses an index past the declared parameters, and only when they are known', () => {
    const message = compileError('order:<1.id>', 1);
    expect(message).toContain(WHERE);
    expect(message).toContain('<1.id> reads argument 1');
    expect(message).toContain('declares 1 parameter ');
    expect(message).toContain('key function');
    expect(compileError('report:<0>', 0)).toContain('declares 0 parameters');
    expect(() => compileLockKey('order:<1.id>', WHERE, 2)).not.toThrow();
    expect(() => compileLockKey('order:<5>', WHERE)).not.toThrow();
    expect(() => compileLockKey('report:nightly', WHERE, 0)).not.toThrow();
    expect(() => compileLockKey('k:<0>', WHERE, -1)).toThrow(TypeError);
  });

  it('refuses empty templates, empty arrays, duplicates and non-string sources', () => {
    expect(compileError('')).toContain('the template is empty');
    expect(compileError([])).toContain('array of templates is empty');
    expect(compileError(['a:<0>', 'a:<0>'])).toContain("the template 'a:<0>' appears twice");
    expect(compileError(['a:<0>', 'b:<'])).toContain("'b:<'");
    expect(compileError(42 as unknown as string)).toContain('got a number (42)');
    expect(compileError(['a', 1] as unknown as string[])).toContain('an array containing a number (1)');
    expect(compileError('x'.repeat(1025))).toContain('1025 characters long');
  });
});

describe('compileLockKey — arrays of templates', () => {
  it('renders one key per template, in order', () => {
    const compiled = compileLockKey(['account:<0>', 'account:<1>'], 'Bank.transfer', 2);
    expect(compiled.render(['a', 'b:c'])).toEqual(['account:a', 'account:b%3Ac']);
    expect(compiled.templates).toEqual(['account:<0>', 'account:<1>']);
  });

  it('refuses two templates rendering the same resource, naming the method', () => {
    const compiled = compileLockKey(['account:<0>', 'account:<1>'], 'Bank.transfer', 2);
    const message = errorOf(() => compiled.render(['a', 'a']));
    expect(message).toContain('Bank.transfer');
    expect(message).toContain("'account:<0>' and 'account:<1>' both rendered 'account:a'");
  });
});

describe('compileLockKey — key functions', () => {
  it('passes the arguments and returns the keys as they are', () => {
    const fn = jest.fn((a: string, b: { id: string }) => [`x:${a}`, `y:${b.id}`]);
    const compiled = compileLockKey(fn, WHERE);
    expect(compiled.templates).toBeUndefined();
    expect(compiled.render(['1', { id: 'a:b' }])).toEqual(['x:1', 'y:a:b']);
    expect(fn).toHaveBeenCalledWith('1', { id: 'a:b' });
    expect(render(() => 'k', [])).toEqual(['k']);
  });

  it('returns a copy of a returned array', () => {
    const keys = ['a', 'b'];
    const out = render(() => keys, []);
    expect(out).toEqual(keys);
    expect(out).not.toBe(keys);
  });

  const invalid: Array<[string, unknown, string]> = [
    ['an empty string', '', 'returned an empty string'],
    ['an empty array', [], 'returned an empty array'],
    ['undefined', undefined, 'returned undefined'],
    ['null', null, 'returned null'],
    ['a number', 42, 'returned a number (42)'],
    ['an object', { key: 'x' }, 'returned an object'],
    ['a Promise', Promise.resolve('x'), 'returned a Promise (key functions must be synchronous)'],
    ['a non-string element', ['a', 1], 'returned a number (1) at index 1'],
    ['an empty element', ['a', ''], 'returned an empty string at index 1'],
    ['duplicates', ['a', 'b', 'a'], "returned 'a' twice (at indexes 0 and 2)"],
    ['an overlong key', 'x'.repeat(1025), '1025 characters long'],
  ];
  it.each(invalid)('refuses %s, naming the method', (_label, result, expected) => {
    const message = renderError(() => result as string, []);
    expect(message).toContain(WHERE);
    expect(message).toContain(expected);
  });

  it('lets the function’s own error propagate unchanged', () => {
    const boom = new RangeError('no such order');
    const compiled = compileLockKey(() => {
      throw boom;
    }, WHERE);
    expect(() => compiled.render([])).toThrow(boom);
  });
});

describe('injectivity (property-based)', () => {
  const templates = [
    '<0>:<1>',
    '<0>-<1>',
    'x<0>/<1>.<2>',
    '{tag}:<0><<<1>>>',
    '<0>:x:<1>',
    '<0>.<1>.<2>',
    'p:<0>+<1>e',
  ];

  it.each(templates)('renders distinct value texts to distinct keys for %s', (template) => {
    const compiled = compileLockKey(template, WHERE);
    const tuples = randomTuples(template.length * 7919, 5000, arityOf(template));
    const rendered: Renderer = (args) => compiled.render(args)[0];
    expect(findCollision(rendered, tuples)).toBeUndefined();
    // The checker saw many distinct texts and many near-misses, so the property is not vacuous.
    expect(new Set(tuples.map(canonical)).size).toBeGreaterThan(1000);
  });

  it('holds through property paths too', () => {
    const compiled = compileLockKey('<0.a>:<1.b.c>', WHERE);
    const tuples = randomTuples(99, 5000, 2);
    const rendered: Renderer = ([x, y]) => compiled.render([{ a: x }, { b: { c: y } }])[0];
    expect(findCollision(rendered, tuples)).toBeUndefined();
  });

  it('holds for every template the compiler accepts (random templates)', () => {
    const random = prng(2024);
    const literals = [
      '',
      ':',
      '-',
      '.',
      'A',
      'F',
      '3',
      '%',
      'x',
      'e',
      '<<',
      '>>',
      '{',
      '}',
      ':x',
      'A:',
      '%3A',
    ];
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
    let accepted = 0;
    let refused = 0;
    for (let t = 0; t < 300; t++) {
      const arity = 1 + Math.floor(random() * 3);
      let template = pick(literals);
      for (let i = 0; i < arity; i++) template += `<${i}>` + pick(literals);
      let compiled: CompiledLockKey;
      try {
        compiled = compileLockKey(template, WHERE, arity);
      } catch (error) {
        expect(error).toBeInstanceOf(InvalidLockKeyError);
        refused++;
        continue;
      }
      accepted++;
      const rendered: Renderer = (args) => compiled.render(args)[0];
      // '<0>' with '' renders an empty key, which is refused (not a collision): leave those out.
      const tuples = randomTuples(t + 1, 600, arity).filter((tuple) => template !== '<0>' || tuple[0] !== '');
      const collision = findCollision(rendered, tuples);
      if (collision !== undefined)
        throw new Error(`collision for template '${template}': ${JSON.stringify(collision)}`);
    }
    // Both branches were exercised: the rule is neither vacuous nor so strict it refuses everything.
    expect(accepted).toBeGreaterThan(50);
    expect(refused).toBeGreaterThan(50);
  });

  it('negative control: the checker catches a naive renderer that does not escape', () => {
    const template = '<0>:<1>';
    const naive: Renderer = (args) => template.replace(/<(\d+)>/g, (_, i: string) => String(args[Number(i)]));
    const collision = findCollision(naive, randomTuples(template.length * 7919, 5000, 2));
    expect(collision).toBeDefined();
    expect(collision?.a).not.toBe(collision?.b);
    // And the classic pair, by hand.
    expect(
      findCollision(naive, [
        ['a:b', 'c'],
        ['a', 'b:c'],
      ]),
    ).toEqual({
      key: 'a:b:c',
      a: '["a:b","c"]',
      b: '["a","b:c"]',
    });
  });
});
