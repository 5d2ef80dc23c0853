import {
  AcquireReply,
  AcquireRequest,
  InvalidArgumentError,
  Locked,
  Redlock,
  RedlockModule,
  RedlockService,
} from '../../lib';
import type { NodeReading } from '../../lib/core';
import { CountingNode } from './helpers';
import { closeApps, createApp } from '../nest/helpers';

/**
 * Issue "nothing left behind" §4, last bullet: the entry points added since the options sweep — read/write
 * (`mode`), semaphores (`permits`), `lead()`, `inspect()`/`holders()`/`revoke()` — given wrong types, wrong
 * ranges and hostile values. Each refusal is an InvalidArgumentError (thrown or rejected, never a TypeError
 * from further in, never an unhandled rejection) whose message names the input, states the rule and says how
 * to fix it, and no node is called. The cases lib/ fell short on when the sweep was written are grouped under
 * "gaps found by the sweep, fixed", each named with what it did then.
 */

// ------------------------------------------------------------------------------------------ hostile values

const trap = (): never => {
  throw new Error('trap');
};
/** A Proxy whose every trap throws: reading, listing, asking its prototype. */
const hostileProxy = new Proxy(
  {},
  { get: trap, getPrototypeOf: trap, ownKeys: trap, has: trap, getOwnPropertyDescriptor: trap },
);
const revocable = Proxy.revocable({}, {});
revocable.revoke();
const revokedProxy = revocable.proxy;
/** A value whose conversions lie: it reads as 5 / 'read' wherever something coerces it. */
const liar = { valueOf: () => 5, toString: () => 'read' };
/** A value whose every conversion throws. */
const unconvertible = { valueOf: trap, toString: trap, [Symbol.toPrimitive]: trap };
const nullProto = Object.create(null) as object;
/** 1 MB: a message quoting it whole would be 1 MB too. */
const LONG = 'x'.repeat(1_000_000);

/** Wrong values of any kind, by label: the rows are built from subsets of it. */
const V: Record<string, unknown> = {
  undefined: undefined,
  null: null,
  "''": '',
  "'   '": '   ',
  "'5'": '5',
  "'true'": 'true',
  "'false'": 'false',
  "'a\\r\\nb'": 'a\r\nb',
  "'a\\0b'": 'a\0b',
  '1 MB string': LONG,
  '0': 0,
  '-0': -0,
  '-1': -1,
  '1.5': 1.5,
  NaN: NaN,
  Infinity: Infinity,
  '-Infinity': -Infinity,
  '2**31': 2 ** 31,
  '2**53 (> MAX_SAFE_INTEGER)': 2 ** 53,
  '1e21': 1e21,
  true: true,
  false: false,
  '{}': {},
  '[]': [],
  '[5]': [5],
  "['read']": ['read'],
  '() => 5': () => 5,
  'Symbol()': Symbol('x'),
  '5n': 5n,
  'new Number(5)': new Number(5),
  "new String('read')": new String('read'),
  'a lying valueOf/toString': liar,
  'a throwing valueOf/toString': unconvertible,
  'a null-prototype object': nullProto,
  'a Proxy whose traps throw': hostileProxy,
  'a revoked Proxy': revokedProxy,
};
const pick = (...labels: string[]): [string, unknown][] => labels.map((label) => [label, V[label]]);
const except = (...labels: string[]): [string, unknown][] =>
  Object.entries(V).filter(([label]) => !labels.includes(label));

/** Everything that is not a non-empty string. */
const NOT_A_STRING = except(
  "''",
  "'   '",
  "'5'",
  "'true'",
  "'false'",
  "'a\\r\\nb'",
  "'a\\0b'",
  '1 MB string',
);
/** Everything that is not a positive whole number (the text and objects included). */
const NOT_A_COUNT = except('undefined', "'   '", "'true'", "'false'", "'a\\r\\nb'", "'a\\0b'", "['read']");

// ------------------------------------------------------------------------------------------ the checks

/** What a refusal must say: the input, the rule, the fix. */
interface Wording {
  input: RegExp;
  rule: RegExp;
  fix: RegExp;
}

const ACCEPTED = Symbol('accepted');

/** What `call()` did: the error it threw or rejected with, or ACCEPTED. Never lets anything escape. */
async function outcome(call: () => unknown): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  return ACCEPTED;
}

/** The refusal is an InvalidArgumentError, short, and names the input, the rule and the fix. */
function expectRefusal(error: unknown, wording: Wording): void {
  if (error === ACCEPTED) throw new Error('accepted: expected an InvalidArgumentError');
  if (!(error instanceof InvalidArgumentError)) {
    throw new Error(`expected an InvalidArgumentError, got ${String(error)}`);
  }
  const { message } = error;
  expect(message).toMatch(wording.input);
  expect(message).toMatch(wording.rule);
  expect(message).toMatch(wording.fix);
  // A hostile value is described, never quoted whole: a 1 MB value makes no 1 MB message.
  expect(message.length).toBeLessThan(2_000);
}

/**
 * A node that grants everything and counts every call, the operators' ones (inspect, scan, revoke,
 * subscriptions, semaphore limits) included; it also records the keys each acquisition asked for.
 */
class OperatorNode extends CountingNode {
  readonly asked: string[][] = [];
  override async acquire(request?: AcquireRequest): Promise<AcquireReply> {
    if (request) this.asked.push([...request.keys]);
    return super.acquire();
  }
  async limit(_key: string, permits: number): Promise<number> {
    this.calls++;
    return permits;
  }
  async inspect(keys: readonly string[]): Promise<NodeReading> {
    this.calls++;
    return { time: Date.now(), keys: keys.map(() => ({ type: 'none' as const })) };
  }
  async scanKeys(): Promise<string[]> {
    this.calls++;
    return [];
  }
  async revoke(): Promise<number> {
    this.calls++;
    return 0;
  }
  async subscribeToChannel(): Promise<() => void> {
    this.calls++;
    return () => undefined;
  }
}

const operatorNodes = (): OperatorNode[] => ['a:1', 'b:1', 'c:1'].map((name) => new OperatorNode(name));

/**
 * A row: what is called, how its refusal must read, and — for a gap the sweep found — what lib/ did before its fix
 * (the row then runs as `it.failing` until lib/ is fixed).
 */
type Row = [label: string, call: (redlock: Redlock) => unknown, wording: Wording, gap?: string];

/** Marks `rows` as a known gap, saying what lib/ did before its fix. */
const gap = (today: string, rows: Row[]): Row[] =>
  rows.map(([label, call, wording]) => [label, call, wording, today]);

/** The rows whose value is a 1 MB string: today its message quotes the value whole (describe() does not cut). */
const QUOTED_WHOLE = 'the message quotes the 1 MB value whole (describe() cuts no string)';
const splitLong = (rows: Row[]): Row[] =>
  rows.map(([label, call, wording, today]): Row =>
    label.includes('1 MB string') ? [label, call, wording, QUOTED_WHOLE] : [label, call, wording, today],
  );

// ------------------------------------------------------------------------------------------ read/write, permits

const PERMITS: Wording = {
  input: /\bpermits\b/,
  rule: /must be a whole number from 1 to 1000/,
  fix: /Example: permits: 5; leave it out for an exclusive lock/,
};
const MODE: Wording = {
  input: /\bmode\b/,
  rule: /must be 'read' or 'write'/,
  fix: /Default: 'write'/,
};
const READ_WITH_PERMITS: Wording = {
  input: /mode: 'read' and permits/,
  rule: /cannot be combined: a semaphore's permits are exclusive locks/,
  fix: /Use one or the other/,
};

/** The three calls that take per-call options. */
const CALLS: [string, (redlock: Redlock, resources: unknown, options: unknown) => unknown][] = [
  ['acquire', (r, resources, options) => r.acquire(resources as never, options as never)],
  ['tryAcquire', (r, resources, options) => r.tryAcquire(resources as never, options as never)],
  ['using', (r, resources, options) => r.using(resources as never, options as never, async () => 1)],
];

const optionRows = (option: string, values: [string, unknown][], wording: Wording): Row[] =>
  CALLS.flatMap(([method, call]) =>
    values.map(([label, value]): Row => [
      `${method}('r', { ${option}: ${label} })`,
      (redlock) => call(redlock, 'r', { [option]: value }),
      wording,
    ]),
  );

const permitsRows: Row[] = splitLong(
  optionRows('permits', [...NOT_A_COUNT.filter(([label]) => label !== 'undefined'), ['1001', 1001]], PERMITS),
);

const modeRows: Row[] = splitLong(
  optionRows(
    'mode',
    [
      ...except('undefined'),
      ["'READ'", 'READ'],
      ["'Write'", 'Write'],
      ["' read'", ' read'],
      ["'read\\n'", 'read\n'],
      ["'read\\0'", 'read\0'],
      ["'shared'", 'shared'],
      ["'exclusive'", 'exclusive'],
    ],
    MODE,
  ),
);

const interplayRows: Row[] = [
  ...CALLS.flatMap(([method, call]) =>
    [1, 2, 1000].map((permits): Row => [
      `${method}('r', { mode: 'read', permits: ${permits} })`,
      (redlock) => call(redlock, 'r', { mode: 'read', permits }),
      READ_WITH_PERMITS,
    ]),
  ),
  [
    "acquire('r', { permits: 2, mode: 'read' }) (the order of the keys does not matter)",
    (redlock) => redlock.acquire('r', { permits: 2, mode: 'read' }),
    READ_WITH_PERMITS,
  ],
  ...CALLS.map(([method, call]): Row => [
    `${method}(['a', 'b'], { permits: 2 })`,
    (redlock) => call(redlock, ['a', 'b'], { permits: 2 }),
    {
      input: /permits: 2/,
      rule: /takes one resource, got \["a","b"\]/,
      fix: /take each in a call of its own/,
    },
  ]),
  [
    "acquire('r', { mode: 'read', permits: 0 }): the permits rule speaks first",
    (redlock) => redlock.acquire('r', { mode: 'read', permits: 0 }),
    PERMITS,
  ],
  [
    "acquire('r', { mode: 'reader', permits: 2 })",
    (redlock) => redlock.acquire('r', { mode: 'reader' as never, permits: 2 }),
    MODE,
  ],
];

/** Resources that are hostile objects, given to the read/write entry point. */
const RESOURCES_UNREADABLE: Wording = {
  input: /\bresources\b/,
  rule: /could not be read|must be a string or an array of strings/,
  fix: /Pass a plain array of strings|Example: 'order:42'/,
};
const hostileResourceRows: Row[] = [
  [
    "acquire(an array-like { length: 1, 0: 'a' }, { mode: 'read' })",
    (redlock) => redlock.acquire({ length: 1, 0: 'a' } as never, { mode: 'read' }),
    RESOURCES_UNREADABLE,
  ],
  [
    'acquire(a Proxy whose traps throw, { permits: 2 })',
    (redlock) => redlock.acquire(hostileProxy as never, { permits: 2 }),
    RESOURCES_UNREADABLE,
  ],
  ...gap("TypeError: Cannot perform 'IsArray' on a proxy that has been revoked (normalizeResources)", [
    [
      "acquire(a revoked Proxy, { mode: 'read' })",
      (redlock) => redlock.acquire(revokedProxy as never, { mode: 'read' }),
      RESOURCES_UNREADABLE,
    ],
    [
      'using(a revoked Proxy, { permits: 2 }, fn)',
      (redlock) => redlock.using(revokedProxy as never, { permits: 2 }, async () => 1),
      RESOURCES_UNREADABLE,
    ],
  ]),
  ...gap("the trap's own Error('trap') escapes, not an InvalidArgumentError", [
    [
      "acquire(an array Proxy whose get trap throws, { mode: 'read' })",
      (redlock) => redlock.acquire(new Proxy(['a'], { get: trap }) as never, { mode: 'read' }),
      RESOURCES_UNREADABLE,
    ],
    [
      "tryAcquire(an array whose element getter throws, { mode: 'write' })",
      (redlock) =>
        redlock.tryAcquire(Object.defineProperty([] as string[], 0, { get: trap, enumerable: true }), {
          mode: 'write',
        }),
      RESOURCES_UNREADABLE,
    ],
  ]),
];

// ------------------------------------------------------------------------------------------ lead()

const LEAD_NAME: Wording = {
  input: /lead\(\) needs the name of the leadership/,
  rule: /as a non-empty string/,
  fix: /e\.g\. 'scheduler'/,
};
const LEAD_WORK: Wording = {
  input: /lead\(\) needs the work to run while leading/,
  rule: /as a function/,
  fix: /\(lease\) => Promise/,
};
const LEAD_TTL: Wording = {
  input: /\bttl\b/,
  rule: /must be a positive whole number of milliseconds|too short|beyond what JavaScript keeps exact/,
  fix: /Example: ttl: 10000|use at least 10 ms|Use at most/,
};
const LEAD_OPTIONS: Wording = {
  input: /lead\(\) options/,
  rule: /must be an object/,
  fix: /like \{ ttl: 10000|Leave them out|leave them out/,
};
const RECAMPAIGN: Wording = {
  input: /lead\(\) option recampaign|\brecampaign\b.*lead\(\)/,
  rule: /must be true or false/,
  fix: /Default: true/,
};
const SIGNAL: Wording = {
  input: /\bsignal\b/,
  rule: /must be an AbortSignal/,
  fix: /Pass controller\.signal of an AbortController/,
};
const work = async () => 1;

const leadRows: Row[] = splitLong([
  ...[...NOT_A_STRING, ...pick("''")].map(([label, value]): Row => [
    `lead(${label}, work)`,
    (redlock) => redlock.lead(value as never, work),
    LEAD_NAME,
  ]),
  [
    "lead('}x', work)",
    (redlock) => redlock.lead('}x', work),
    { input: /resource "}x"/, rule: /starts with "}"/, fix: /Put another character first/ },
  ],
  [
    "lead('\\uD800', work)",
    (redlock) => redlock.lead('\uD800', work),
    { input: /resource "\\ud800"/, rule: /not well-formed Unicode/, fix: /Pass well-formed strings/ },
  ],
  [
    'lead(1 MB + a lone surrogate, work): the message cuts the name',
    (redlock) => redlock.lead(`${LONG}\uD800`, work),
    { input: /resource "x+…"…\(1000001 chars\)/, rule: /not well-formed/, fix: /Pass well-formed/ },
  ],
  ...[
    ...except('() => 5', "''", "'   '", "'5'", "'true'", "'false'", "'a\\r\\nb'", "'a\\0b'"),
    ["'work'", 'work'] as [string, unknown],
    ['a Promise (work() called too early)', Promise.resolve(1)] as [string, unknown],
  ].map(([label, value]): Row => [
    `lead('leader', ${label})`,
    (redlock) => redlock.lead('leader', value as never),
    LEAD_WORK,
  ]),
  ...pick(
    '0',
    '-1',
    '1.5',
    'NaN',
    'Infinity',
    '2**53 (> MAX_SAFE_INTEGER)',
    "'5'",
    'null',
    'true',
    '{}',
    '5n',
  )
    .concat([['5 (too short)', 5]])
    .map(([label, value]): Row => [
      `lead('leader', work, { ttl: ${label} })`,
      (redlock) => redlock.lead('leader', work, { ttl: value as never }),
      LEAD_TTL,
    ]),
  ...pick("'5'", '5n', 'null', '{}', 'true', '() => 5', 'a Proxy whose traps throw')
    .concat([
      ['new AbortController() (the controller, not its signal)', new AbortController()],
      ['an object made from AbortSignal.prototype', Object.create(AbortSignal.prototype)],
    ])
    .map(([label, value]): Row => [
      `lead('leader', work, { signal: ${label} })`,
      (redlock) => redlock.lead('leader', work, { signal: value as never }),
      SIGNAL,
    ]),
  ...pick("'true'", "'false'").map(([label, value]): Row => [
    `lead('leader', work, { recampaign: ${label} }): how to convert the text`,
    (redlock) => redlock.lead('leader', work, { recampaign: value as never }),
    { input: /\brecampaign\b/, rule: /must be true or false/, fix: /convert it, e\.g\. value === 'true'/ },
  ]),
  ...(
    [
      ['wait', /Unknown lead\(\) option "wait"/],
      ['ttL', /Unknown lead\(\) option "ttL" \(did you mean "ttl"\?\)/],
      ['fencing', /Unknown lead\(\) option "fencing"/],
    ] as const
  ).map(([key, input]): Row => [
    `lead('leader', work, { ${key}: 1 })`,
    (redlock) => redlock.lead('leader', work, { [key]: 1 } as never),
    { input, rule: /Known ones: ttl, recampaign, signal/, fix: /Known ones/ },
  ]),
  [
    "lead('leader', work, { get ttl() { throw } })",
    (redlock) =>
      redlock.lead('leader', work, {
        get ttl(): number {
          throw new RangeError('no config yet');
        },
      }),
    {
      input: /lead\(\) option "ttl"/,
      rule: /could not be read: its getter \(or a Proxy trap\) threw \(RangeError: no config yet\)/,
      fix: /pass \{ ttl: value \}/,
    },
  ],
  [
    "lead('leader', work, a Proxy whose traps throw)",
    (redlock) => redlock.lead('leader', work, hostileProxy as never),
    {
      input: /lead\(\) options/,
      rule: /could not be read: listing its keys threw/,
      fix: /Pass a plain object/,
    },
  ],
  ...gap("TypeError: Cannot perform 'IsArray' on a proxy that has been revoked (validateLead)", [
    [
      "lead('leader', work, a revoked Proxy)",
      (redlock) => redlock.lead('leader', work, revokedProxy as never),
      { input: /lead\(\) options/, rule: /could not be read/, fix: /Pass a plain object/ },
    ],
  ]),
  ...gap(
    '"lead() options must be an object, got null." — no example, no "leave them out"',
    pick('null', '-1', "'5'", 'true', '[]', '() => 5', 'Symbol()', '5n').map(([label, value]): Row => [
      `lead('leader', work, ${label})`,
      (redlock) => redlock.lead('leader', work, value as never),
      LEAD_OPTIONS,
    ]),
  ),
  ...gap(
    '"recampaign must be true or false, got 0." — neither lead() nor the default is named',
    pick('0', "'5'", '{}', '[]', 'Symbol()', '5n').map(([label, value]): Row => [
      `lead('leader', work, { recampaign: ${label} })`,
      (redlock) => redlock.lead('leader', work, { recampaign: value as never }),
      RECAMPAIGN,
    ]),
  ),
  ...gap(
    "accepted: `own('recampaign') ?? true` takes null for the default (null is refused for every other option)",
    [
      [
        "lead('leader', work, { recampaign: null })",
        (redlock) => redlock.lead('leader', work, { recampaign: null as never }),
        RECAMPAIGN,
      ],
    ],
  ),
]);

// ------------------------------------------------------------------------------------------ inspect(), revoke()

/** inspect() and revoke() take one resource name. */
const resourceRows = (operation: 'inspect' | 'revoke'): Row[] => {
  const call = (redlock: Redlock, resource: unknown) =>
    operation === 'inspect'
      ? redlock.inspect(resource as never)
      : redlock.revoke(resource as never, { reason: 'test' });
  const named = new RegExp(`${operation}\\(\\) takes one resource name`);
  return [
    ...gap(
      `"${operation}() takes one resource name (a string), got 5." — no example, nothing on arrays`,
      NOT_A_STRING.map(([label, value]): Row => [
        `${operation}(${label})`,
        (redlock) => call(redlock, value),
        {
          input: named,
          rule: /\(a string\), got/,
          fix: new RegExp(`Example: ${operation}\\('order:42'`),
        },
      ]),
    ),
    ...gap(
      `"every resource must be a non-empty string, got "" (a string) in [""]." — no ${operation}(), a list never passed, no fix`,
      [
        [
          `${operation}('')`,
          (redlock) => call(redlock, ''),
          { input: named, rule: /non-empty string/, fix: new RegExp(`Example: ${operation}\\('order:42'`) },
        ],
      ],
    ),
    [
      `${operation}('}x')`,
      (redlock) => call(redlock, '}x'),
      { input: /resource "}x"/, rule: /starts with "}"/, fix: /Put another character first/ },
    ],
    [
      `${operation}('\\uDC00')`,
      (redlock) => call(redlock, '\uDC00'),
      { input: /resource "\\udc00"/, rule: /not well-formed Unicode/, fix: /Pass well-formed strings/ },
    ],
    [
      `${operation}(1 MB + a lone surrogate): the message cuts the resource`,
      (redlock) => call(redlock, `${LONG}\uD800`),
      { input: /resource "x+…"…\(1000001 chars\)/, rule: /not well-formed/, fix: /Pass well-formed/ },
    ],
  ];
};

// ------------------------------------------------------------------------------------------ holders()

const NOT_FOR_HOLDERS = 'the example { ttl: 5000 } names an option holders() does not take';
const holdersRows: Row[] = [
  ...gap(
    '"holders() takes an options object, got "order:" (a string)." — no example, no "leave it out"',
    pick('null', '5n', 'true', "'5'", '0', 'Symbol()', '() => 5').map(([label, value]): Row => [
      `holders(${label})`,
      (redlock) => redlock.holders(value as never),
      {
        input: /holders\(\) (takes an options object|options must be an object)/,
        rule: /got/,
        fix: /like \{ prefix: 'order:'|leave it out|Leave it out/,
      },
    ]),
  ),
  ...gap(
    `"holders() options must be an object like { ttl: 5000 }, got an array." — ${NOT_FOR_HOLDERS}`,
    pick('[]', '[5]').map(([label, value]): Row => [
      `holders(${label})`,
      (redlock) => redlock.holders(value as never),
      { input: /holders\(\) options/, rule: /must be an object/, fix: /like \{ prefix: / },
    ]),
  ),
  ...(
    [
      ['lmit', /Unknown holders\(\) option "lmit" \(did you mean "limit"\?\)/],
      ['prefx', /Unknown holders\(\) option "prefx" \(did you mean "prefix"\?\)/],
    ] as const
  ).map(([key, input]): Row => [
    `holders({ ${key}: 5 })`,
    (redlock) => redlock.holders({ [key]: 5 } as never),
    { input, rule: /Known ones: prefix, limit/, fix: /did you mean/ },
  ]),
  [
    'holders({ get prefix() { throw } })',
    (redlock) =>
      redlock.holders({
        get prefix(): string {
          throw new Error('no config');
        },
      }),
    {
      input: /holders\(\) option "prefix"/,
      rule: /could not be read: its getter \(or a Proxy trap\) threw \(Error: no config\)/,
      fix: /pass \{ prefix: value \}/,
    },
  ],
  ...gap(`"...Pass a plain object of values: { ttl: 5000 }." — ${NOT_FOR_HOLDERS}`, [
    [
      'holders(a Proxy whose traps throw)',
      (redlock) => redlock.holders(hostileProxy as never),
      { input: /holders\(\) options/, rule: /could not be read/, fix: /\{ prefix: / },
    ],
    [
      'holders(a revoked Proxy)',
      (redlock) => redlock.holders(revokedProxy as never),
      { input: /holders\(\) options/, rule: /could not be read/, fix: /\{ prefix: / },
    ],
  ]),
  ...gap(
    '"holders() limit must be a whole number from 1 to 10000, got 0." — no default, no conversion hint for text',
    [...NOT_A_COUNT.filter(([label]) => label !== 'undefined'), ['10001', 10_001] as [string, unknown]].map(
      ([label, value]): Row => [
        `holders({ limit: ${label} })`,
        (redlock) => redlock.holders({ limit: value as never }),
        {
          input: /holders\(\) limit/,
          rule: /must be a whole number from 1 to 10000/,
          fix: label === "'5'" ? /convert it with Number\(\)/ : /Default: 100/,
        },
      ],
    ),
  ),
  ...gap(
    '"holders() prefix must be a string (the start of resource names), got 5." — no example, no "leave it out"',
    NOT_A_STRING.filter(([label]) => label !== 'undefined').map(([label, value]): Row => [
      `holders({ prefix: ${label} })`,
      (redlock) => redlock.holders({ prefix: value as never }),
      {
        input: /holders\(\) prefix/,
        rule: /must be a string/,
        fix: /Example: \{ prefix: 'order:' \}|leave it out/,
      },
    ]),
  ),
];

// ------------------------------------------------------------------------------------------ revoke() options

const REVOKE_REASON: Wording = {
  input: /revoke\(\) needs a reason/,
  rule: /a non-empty string of at most 500 characters, got/,
  fix: /Example: revoke\('order:42', \{ reason: /,
};
const revokeRows: Row[] = [
  ...pick('undefined', 'null', "'5'", '5n', 'true', 'Symbol()', '() => 5').map(([label, value]): Row => [
    `revoke('r', ${label})`,
    (redlock) => redlock.revoke('r', value as never),
    {
      input: /revoke\(\) takes options \{ reason: string \}/,
      rule: /got/,
      fix: /say why the lock is revoked/,
    },
  ]),
  ...gap(
    '"revoke() options must be an object like { ttl: 5000 }, got an array." — ttl is no revoke() option',
    [
      ...pick('[]', '[5]').map(([label, value]): Row => [
        `revoke('r', ${label})`,
        (redlock) => redlock.revoke('r', value as never),
        { input: /revoke\(\) options/, rule: /must be an object/, fix: /\{ reason: / },
      ]),
      [
        "revoke('r', a Proxy whose traps throw)",
        (redlock) => redlock.revoke('r', hostileProxy as never),
        { input: /revoke\(\) options/, rule: /could not be read/, fix: /\{ reason: / },
      ],
    ],
  ),
  ...gap(
    '"revoke() needs a reason: ..., got 5. It is logged and handed to the holder." — no example of a call',
    [
      ...NOT_A_STRING.filter(([label]) => !['a Proxy whose traps throw', 'a revoked Proxy'].includes(label)),
      ...pick("''", "'   '"),
      ['501 characters', 'x'.repeat(501)] as [string, unknown],
      ['1 MB string', LONG] as [string, unknown],
    ].map(([label, value]): Row => [
      `revoke('r', { reason: ${label} })`,
      (redlock) => redlock.revoke('r', { reason: value as never }),
      REVOKE_REASON,
    ]),
  ),
  [
    "revoke('r', { reson: 'x' })",
    (redlock) => redlock.revoke('r', { reson: 'x' } as never),
    {
      input: /Unknown revoke\(\) option "reson" \(did you mean "reason"\?\)/,
      rule: /Known ones: reason/,
      fix: /did you mean/,
    },
  ],
  [
    "revoke('r', { get reason() { throw } })",
    (redlock) =>
      redlock.revoke('r', {
        get reason(): string {
          throw new Error('no reason yet');
        },
      }),
    {
      input: /revoke\(\) option "reason"/,
      rule: /could not be read: its getter \(or a Proxy trap\) threw \(Error: no reason yet\)/,
      fix: /pass \{ reason: value \}/,
    },
  ],
];

// ------------------------------------------------------------------------------------------ the tests

/**
 * The gaps the sweep found, fixed in lib/ since: plain tests, each named with what lib/ did before the fix (a
 * regression makes them fail again).
 */
const gapIt = it;

const TABLES: [string, Row[]][] = [
  ['permits', permitsRows],
  ['mode', modeRows],
  ['mode and permits together', interplayRows],
  ['hostile resources (read/write, permits)', hostileResourceRows],
  ['lead()', leadRows],
  ['inspect()', resourceRows('inspect')],
  ['holders()', holdersRows],
  ['revoke(resource)', resourceRows('revoke')],
  ['revoke(resource, options)', revokeRows],
];

describe('new entry points refuse wrong input, naming the input, the rule and the fix, before any traffic', () => {
  const nodes = operatorNodes();
  const redlock = new Redlock(nodes, { logger: false, restartGuard: false });
  afterEach(() => nodes.forEach((node) => (node.calls = 0)));
  afterAll(() => redlock.quit());

  async function check(call: (redlock: Redlock) => unknown, wording: Wording): Promise<void> {
    expectRefusal(await outcome(() => call(redlock)), wording);
    expect(nodes.map((node) => node.calls)).toEqual([0, 0, 0]);
  }

  describe.each(TABLES)('%s', (_, rows) => {
    it.each(rows.filter((row) => row[3] === undefined))('%s', (_label, call, wording) =>
      check(call, wording),
    );
  });

  describe('gaps found by the sweep, fixed', () => {
    const gaps = TABLES.flatMap(([table, rows]) =>
      rows
        .filter((row) => row[3] !== undefined)
        .map(([label, call, wording, today]): [string, Row[1], Wording] => [
          `${table}: ${label} — was: ${today}`,
          call,
          wording,
        ]),
    );
    gapIt.each(gaps)('%s', (_label, call, wording) => check(call, wording));
  });

  describe('values that lie: read once, the value checked is the value used', () => {
    /** An options object whose `key` getter counts its reads and returns `value`. */
    const counted = (key: string, value: unknown) => {
      const reads = { count: 0 };
      const options = Object.defineProperty({}, key, {
        enumerable: true,
        get: () => {
          reads.count++;
          return value;
        },
      });
      return { options, reads };
    };

    it('negative control: acquire() reads permits and mode once', async () => {
      const permits = counted('permits', 2);
      await (await redlock.acquire('once:p', permits.options)).release();
      const mode = counted('mode', 'read');
      await (await redlock.acquire('once:m', mode.options)).release();
      expect([permits.reads.count, mode.reads.count]).toEqual([1, 1]);
    });

    describe('gaps found by the sweep, fixed', () => {
      gapIt('lead() reads its options once (was: twice, rejectUnknownKeys then own())', async () => {
        const { options, reads } = counted('ttl', 5_000);
        await redlock.lead('once:lead', work, options);
        expect(reads.count).toBe(1);
      });

      gapIt(
        'holders() reads its options once (was: twice, rejectUnknownKeys then destructuring)',
        async () => {
          const { options, reads } = counted('limit', 5);
          await redlock.holders(options);
          expect(reads.count).toBe(1);
        },
      );

      gapIt(
        'revoke() reads its options once (was: twice, rejectUnknownKeys then destructuring)',
        async () => {
          const { options, reads } = counted('reason', 'ops');
          await redlock.revoke('once:revoke', options as never);
          expect(reads.count).toBe(1);
        },
      );

      gapIt(
        "a resources array read once: a lying element getter cannot slip a refused resource past the check (was: read 3 times, 'a' checked, '\\uD800' locked)",
        async () => {
          let reads = 0;
          const lying = Object.defineProperty([] as string[], 0, {
            enumerable: true,
            get: () => (++reads === 1 ? 'a' : '\uD800'),
          });
          nodes.forEach((node) => node.asked.splice(0));
          const error = await outcome(() => redlock.acquire(lying, { mode: 'read' }));
          const asked = nodes.flatMap((node) => node.asked.splice(0)).flat();
          // Either refused (the lone surrogate seen), or locked on what was checked: never a key for '\uD800'.
          if (error === ACCEPTED) expect(asked.every((key) => !key.includes('\uD800'))).toBe(true);
          else expect(error).toBeInstanceOf(InvalidArgumentError);
          expect(reads).toBe(1);
        },
      );

      gapIt("a lock's resources are its own copy, not the caller's array (was: the same array)", async () => {
        const list = ['copy:a'];
        const lock = await redlock.acquire(list, { mode: 'read' });
        list[0] = 'copy:b';
        expect(lock.resources).toEqual(['copy:a']);
        await lock.release();
      });
    });
  });

  it('negative controls: good values of the same inputs are taken', async () => {
    await (await redlock.acquire('ok:rw', { mode: 'read' })).release();
    await (await redlock.acquire(['ok:a', 'ok:b'], { mode: 'read' })).release();
    await (await redlock.acquire('ok:sem', { mode: 'write', permits: 1000 })).release();
    expect(await redlock.tryAcquire('ok:one', { permits: 1 })).not.toBeNull();
    await expect(redlock.lead('ok:lead', async () => 7, { ttl: 10, recampaign: false })).resolves.toBe(7);
    expect((await redlock.inspect(`ok:${'\u00e9'.repeat(10_000)}\r\n\0`)).state).toBe('free');
    await expect(redlock.holders({ prefix: '', limit: 10_000 })).resolves.toEqual([]);
    await expect(redlock.holders()).resolves.toEqual([]);
    const outcomeOf = await redlock.revoke('ok:r', { reason: 'x'.repeat(500) });
    expect(outcomeOf.resource).toBe('ok:r');
  });
});

// ------------------------------------------------------------------------------------------ Nest

describe('the Nest layer refuses the same input the same way (one case each)', () => {
  afterAll(() => closeApps());
  let service: RedlockService;
  const nodes = operatorNodes();
  beforeAll(async () => {
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes, { logger: false, restartGuard: false })],
    });
    service = app.get(RedlockService);
  });
  beforeEach(() => nodes.forEach((node) => (node.calls = 0)));

  type NestRow = [label: string, call: () => unknown, wording: Wording];
  const rows: NestRow[] = [
    ["service.acquire('r', { permits: 0 })", () => service.acquire('r', { permits: 0 }), PERMITS],
    [
      "service.tryAcquire('r', { mode: 'READ' })",
      () => service.tryAcquire('r', { mode: 'READ' as never }),
      MODE,
    ],
    [
      "service.using('r', { mode: 'read', permits: 2 }, fn)",
      () => service.using('r', { mode: 'read', permits: 2 }, async () => 1),
      READ_WITH_PERMITS,
    ],
    ["service.lead('', work)", () => service.lead('', work), LEAD_NAME],
    ["service.lead('leader', 'work')", () => service.lead('leader', 'work' as never), LEAD_WORK],
    [
      "service.inspect('}x')",
      () => service.inspect('}x'),
      { input: /resource "}x"/, rule: /starts with "}"/, fix: /Put another character first/ },
    ],
    [
      'service.holders({ lmit: 5 })',
      () => service.holders({ lmit: 5 } as never),
      { input: /Unknown holders\(\) option "lmit"/, rule: /Known ones/, fix: /did you mean "limit"/ },
    ],
    [
      "service.revoke('r', 'why')",
      () => service.revoke('r', 'why' as never),
      { input: /revoke\(\) takes options \{ reason: string \}/, rule: /got/, fix: /say why/ },
    ],
  ];

  async function check(call: () => unknown, wording: Wording): Promise<void> {
    expectRefusal(await outcome(call), wording);
    expect(nodes.map((node) => node.calls)).toEqual([0, 0, 0]);
  }

  it.each(rows)('%s', (_label, call, wording) => check(call, wording));

  /** What `Locked(key, options)` throws when the class is defined. */
  function defining(options: unknown): unknown {
    try {
      class Service {
        async work() {
          return 1;
        }
      }
      const descriptor = Object.getOwnPropertyDescriptor(Service.prototype, 'work')!;
      Locked('r', options as never)(Service.prototype, 'work', descriptor as never);
    } catch (error) {
      return error;
    }
    return ACCEPTED;
  }

  it.each([
    ['{ permits: 0 }', { permits: 0 }, PERMITS],
    ["{ permits: '3' }", { permits: '3' }, PERMITS],
    ["{ mode: 'READ' }", { mode: 'READ' }, MODE],
    ["{ mode: 'read', permits: 2 }", { mode: 'read', permits: 2 }, READ_WITH_PERMITS],
  ])('@Locked(key, %s) is refused when the class is defined', (_label, options, wording) => {
    const error = defining(options);
    expectRefusal(error, wording);
    expect((error as Error).message).toMatch(/^@Locked on Service\.work: /);
  });

  describe('gaps found by the sweep, fixed', () => {
    gapIt.each([
      ['5n (JSON.stringify throws "Do not know how to serialize a BigInt")', 5n],
      ['an object whose toJSON throws (its Error escapes)', { toJSON: trap }],
      ['a Proxy whose traps throw (its Error escapes)', hostileProxy],
    ])(
      'service.lead(%s, work) rejects with the InvalidArgumentError (was: a synchronous throw from JSON.stringify(name))',
      (_label, name) => check(() => service.lead(name as never, work), LEAD_NAME),
    );
  });
});
