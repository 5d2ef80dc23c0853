import { Redlock } from '../../../lib/redis';

/** The release channel the scenario's waiter subscribes to (resource `resubscribe`, the default prefix). */
export const RELEASE_CHANNEL = 'redlock:{resubscribe}:released';

/**
 * The re-subscribe scenario, run inside a client process so that an unhandled rejection kills the process
 * as it would kill an application: a holder and a waiter on one node (reached through the parent's
 * `SubscribeDropper`); while the waiter waits, `steps.waiting()` lets the parent see the waiter subscribe to
 * {@link RELEASE_CHANNEL}, then drop the connections and the re-SUBSCRIBE that follows the reconnect; then
 * the holder releases and the waiter must get the lock.
 */
export async function resubscribeScenario(
  url: string,
  steps: { waiting(): Promise<void>; done(error?: string): void },
): Promise<void> {
  const options = { ttl: 3_000, restartGuard: false, logger: false } as const;
  const holder = new Redlock([url], options);
  const waiter = new Redlock([url], options);
  try {
    await Promise.all([holder.connect(2_000), waiter.connect(2_000)]);
    const lock = await holder.acquire('resubscribe');
    const waiting = waiter.acquire('resubscribe', { wait: 10_000 });
    await steps.waiting(); // the parent waits for the waiter's SUBSCRIBE itself (it passes its forwarder)
    await holder.release(lock);
    await waiter.release(await waiting);
    steps.done();
  } catch (error) {
    steps.done(String((error as Error)?.stack ?? error));
  } finally {
    await Promise.all([holder.quit(), waiter.quit()]);
  }
}
