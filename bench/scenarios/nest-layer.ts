/**
 * The NestJS layer (RedlockModule, RedlockService, @Locked), loaded from `lib/index.ts` at run time: it is
 * being written alongside the benchmark, and the decorator scenario reports "skipped" rather than breaking
 * the run (or the type check) while it does not exist yet.
 */
export interface NestLayer {
  readonly RedlockModule: { forRoot(nodes: string[], options?: object): unknown };
  readonly RedlockService: abstract new (...args: never[]) => NestRedlockService;
  readonly Locked: (key: string, options?: object) => MethodDecorator;
}

export interface NestRedlockService {
  using<T>(resources: string | string[], options: object, fn: (lock: unknown) => Promise<T>): Promise<T>;
}

/** The layer, or why it is not available. */
export function loadNestLayer(): NestLayer | { missing: string } {
  let lib: Record<string, unknown>;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    lib = require('../../lib') as Record<string, unknown>;
  } catch (error) {
    return { missing: `lib/index.ts could not be loaded (${(error as Error).message.split('\n')[0]})` };
  }
  const absent = ['RedlockModule', 'RedlockService', 'Locked'].filter((name) => lib[name] === undefined);
  if (absent.length > 0) return { missing: `lib/index.ts does not export ${absent.join(', ')} yet` };
  const module = lib.RedlockModule as { forRoot?: unknown };
  if (typeof module.forRoot !== 'function' || typeof lib.Locked !== 'function') {
    return { missing: 'RedlockModule.forRoot or Locked is not a function' };
  }
  return lib as unknown as NestLayer;
}
