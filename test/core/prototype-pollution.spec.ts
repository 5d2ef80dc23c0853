import { DEFAULT_OPTIONS, resolveCallOptions, resolveOptions } from '../../lib/core';
import { validateLead } from '../../lib/core/primitives/leadership';

/**
 * Issue "nothing left behind" §4: options are read from the caller's own properties only, so a polluted
 * `Object.prototype` (a `wait: 0` set elsewhere in the process) changes nothing.
 */
describe('options ignore a polluted Object.prototype', () => {
  const polluted = { wait: 0, ttl: 1, fencing: true, autoExtend: false, recampaign: false, keyPrefix: 'x:' };

  function withPollution(check: () => void): void {
    for (const [key, value] of Object.entries(polluted)) {
      Object.defineProperty(Object.prototype, key, { value, configurable: true, writable: true });
    }
    try {
      check();
    } finally {
      for (const key of Object.keys(polluted)) delete (Object.prototype as Record<string, unknown>)[key];
    }
  }

  it('the instance and each call keep their own options and the defaults', () => {
    withPollution(() => {
      const instance = resolveOptions({ logger: false });
      expect(instance.wait).toBe(DEFAULT_OPTIONS.wait);
      expect(instance.keyPrefix).toBe(DEFAULT_OPTIONS.keyPrefix);
      const call = resolveCallOptions({ ttl: 2_000 }, instance);
      expect(call).toMatchObject({
        ttl: 2_000,
        wait: DEFAULT_OPTIONS.wait,
        fencing: DEFAULT_OPTIONS.fencing,
      });
      expect(resolveCallOptions(undefined, instance).wait).toBe(DEFAULT_OPTIONS.wait);
    });
  });

  it("lead() reads its options from the caller's own properties", () => {
    withPollution(() => {
      const lead = validateLead('leader', async () => undefined, {});
      expect(lead).toEqual({ ttl: undefined, recampaign: true, signal: undefined });
    });
  });

  it('negative control: a plain copy of the options does see the polluted value', () => {
    withPollution(() => {
      const copy: Record<string, unknown> = { ...{ ttl: 2_000 } };
      expect(copy.wait).toBe(0);
    });
  });
});
