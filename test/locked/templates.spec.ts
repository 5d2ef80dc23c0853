import { Injectable } from '@nestjs/common';
import {
  InvalidLockKeyError,
  LockBusyError,
  Locked,
  RedlockError,
  RedlockModule,
  RedlockService,
} from '../../lib';
import { useRedisNodes } from '../support';
import { TEST_OPTIONS, closeApps, createApp, gate, keyOf, valuesOnNodes } from '../nest/helpers';

/** Each method reports the resources of the lock it runs under, and can look at the nodes meanwhile. */
@Injectable()
class Keys {
  constructor(readonly redlock: RedlockService) {}

  private held() {
    return this.redlock.current()!.resources;
  }

  @Locked('order:<0>', { wait: 0 })
  async byIndex(id: unknown, during?: () => Promise<unknown>) {
    await during?.();
    return this.held();
  }

  @Locked('tenant:<0>/user:<1.user.id>')
  async byPath(tenant: string, request: { user?: { id?: unknown } }) {
    return this.held();
  }

  @Locked(['account:<0>', 'account:<1>'])
  async transfer(from: string, to: string, during: () => Promise<unknown>) {
    return [this.held(), await during()];
  }

  @Locked((a: string, b: string) => [`pair/${a}`, `pair/${b}`])
  async byFunction(a: string, b: string) {
    return this.held();
  }

  @Locked('<0>:<1>', { wait: 0 })
  async twoParts(a: string, b: string, during?: () => Promise<unknown>) {
    await during?.();
    return this.held();
  }
}

describe('@Locked key templates (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterAll: closeApps, flushAfterEach: false });
  let keys: Keys;

  beforeAll(async () => {
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, TEST_OPTIONS)],
      providers: [Keys],
    });
    keys = app.get(Keys);
  });

  it('<0> is the first argument; the key lands on the nodes under the prefix', async () => {
    const during = () => valuesOnNodes(nodes, keyOf('order:42'));
    let seen: unknown;
    expect(await keys.byIndex('42', async () => (seen = await during()))).toEqual(['order:42']);
    expect((seen as unknown[]).every((value) => typeof value === 'string')).toBe(true);
  });

  it('numbers and their string form name the same resource (a cron passing 42, HTTP passing "42")', async () => {
    const entered = gate();
    const leave = gate();
    const holder = keys.byIndex(42, async () => {
      entered.open();
      await leave.promise;
    });
    await entered.promise;
    const error = await keys.byIndex('42').catch((e: unknown) => e); // an independent call, not nested
    leave.open();
    await holder;
    expect(error).toBeInstanceOf(LockBusyError);
    expect((error as LockBusyError).resources).toEqual(['order:42']);
  });

  it('property paths and several placeholders', async () => {
    expect(await keys.byPath('acme', { user: { id: 7 } })).toEqual(['tenant:acme/user:7']);
  });

  it('an array of templates locks several resources at once', async () => {
    const [held, seen] = (await keys.transfer('a', 'b', async () => [
      await valuesOnNodes(nodes, keyOf('account:a')),
      await valuesOnNodes(nodes, keyOf('account:b')),
    ])) as [string[], (string | null)[][]];
    expect(held).toEqual(['account:a', 'account:b']);
    expect(seen.flat().every((value) => typeof value === 'string')).toBe(true);
  });

  it('a key function returns the keys as they are', async () => {
    expect(await keys.byFunction('x', 'y')).toEqual(['pair/x', 'pair/y']);
  });

  it("rendering is injective: ('a:b', 'c') and ('a', 'b:c') are different resources, held at the same time", async () => {
    const entered = gate();
    const leave = gate();
    const first = keys.twoParts('a:b', 'c', async () => {
      entered.open();
      await leave.promise;
    });
    await entered.promise;
    // An independent call (not nested, so not reentrant) with one attempt: it succeeds only on another key.
    expect(await keys.twoParts('a', 'b:c')).toEqual(['a:b%3Ac']);
    leave.open();
    expect(await first).toEqual(['a%3Ab:c']);
  });

  it.each([
    [undefined, /^Cannot build the lock key for Keys\.byIndex: <0> needs argument 0, which is undefined/],
    [null, /^Cannot build the lock key for Keys\.byIndex: <0> needs argument 0, which is null/],
    [
      { id: 1 },
      /^Cannot build the lock key for Keys\.byIndex: <0> is an object; use a property path like <0\.id>/,
    ],
    [Number.NaN, /<0> is NaN; only finite numbers can be part of a lock key/],
  ])('%p as the argument is refused, naming the method and the placeholder', async (value, message) => {
    const error = await keys.byIndex(value).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidLockKeyError);
    expect(error).toBeInstanceOf(RedlockError);
    expect((error as Error).message).toMatch(message);
  });

  it('a broken property path is refused, naming the method and the placeholder', async () => {
    await expect(keys.byPath('acme', {})).rejects.toThrow(
      "Cannot build the lock key for Keys.byPath: <1.user.id> cannot read 'id' because <1.user> is undefined.",
    );
  });

  it.each([
    ['order:<0', "Invalid lock key template 'order:<0' for Bad.work: unclosed placeholder"],
    [
      'order:<1>',
      "Invalid lock key template 'order:<1>' for Bad.work: <1> reads argument 1, but Bad.work declares 1 parameter",
    ],
    ['<0><0.id>', 'are separated by nothing'],
    ['', 'the template is empty'],
  ])('a malformed template %p fails when the class is defined', (template, message) => {
    const define = () => {
      class Bad {
        @Locked(template)
        async work(id: string) {}
      }
      return Bad;
    };
    expect(define).toThrow(InvalidLockKeyError);
    expect(define).toThrow(message);
  });
});
