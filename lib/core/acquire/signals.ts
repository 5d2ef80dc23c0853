/**
 * One signal that aborts when either `first` or `second` does, with that one's reason (`AbortSignal.any`
 * needs Node 20.3, and the engines floor is Node 20.0). Without `first`, `second` itself. `dispose()` removes the
 * listeners once the call is over, so a long-lived signal never collects them.
 */
export function eitherSignal(
  first: AbortSignal | undefined,
  second: AbortSignal,
): { readonly signal: AbortSignal; dispose(): void } {
  if (first === undefined) return { signal: second, dispose: () => undefined };
  const controller = new AbortController();
  const onFirst = () => controller.abort(first.reason);
  const onSecond = () => controller.abort(second.reason);
  const dispose = () => {
    first.removeEventListener('abort', onFirst);
    second.removeEventListener('abort', onSecond);
  };
  if (first.aborted) onFirst();
  else if (second.aborted) onSecond();
  else {
    first.addEventListener('abort', onFirst, { once: true });
    second.addEventListener('abort', onSecond, { once: true });
  }
  return { signal: controller.signal, dispose };
}
