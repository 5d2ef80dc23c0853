import { RedlockEventMap } from '../../lib';
import { useRedisNodes } from '../support';
import { closeAll, redlockOn } from './helpers';

/**
 * What a term is called (issue "nothing left behind" §3): `termOfCall` counts per `lead()` call on one
 * instance, so two successive leaders on two instances both report 1, while the lease's `fencingToken` orders
 * the terms across the fleet; `deposed` carries the same token as its `elected`.
 */
describe('leadership terms: per call, and fleet-wide by fencing token (3 real nodes)', () => {
  const redisNodes = useRedisNodes(3, { afterEach: closeAll });

  it('two successive leaders on two instances: termOfCall 1 each, larger token for the later term', async () => {
    const [a, b] = await Promise.all([redlockOn(redisNodes), redlockOn(redisNodes)]);
    const seen: (RedlockEventMap['elected'] | RedlockEventMap['deposed'])[] = [];
    for (const instance of [a, b]) {
      instance.on('elected', (event) => seen.push(event));
      instance.on('deposed', (event) => seen.push(event));
    }
    const first = await a.lead('terms', async (lease) => lease.fencingToken);
    const second = await b.lead('terms', async (lease) => lease.fencingToken);
    expect(second).toBeGreaterThan(first!);
    expect(seen).toEqual([
      { resources: ['terms'], termOfCall: 1, term: 1, fencingToken: first },
      { resources: ['terms'], termOfCall: 1, term: 1, fencingToken: first, reason: 'returned' },
      { resources: ['terms'], termOfCall: 1, term: 1, fencingToken: second },
      { resources: ['terms'], termOfCall: 1, term: 1, fencingToken: second, reason: 'returned' },
    ]);
  });
});
