/** The context of every log line the Nest layer writes. */
export const LOGGER_CONTEXT = 'Redlock';

/** Injection token of the module options (what `forRoot` / the `forRootAsync` factory produced). */
export const REDLOCK_MODULE_OPTIONS = 'REDLOCK_MODULE_OPTIONS';

/** Injection token of the validated options and the core instance built from them (one per application). */
export const REDLOCK_RESOLVED_OPTIONS = 'REDLOCK_RESOLVED_OPTIONS';

/**
 * Defaults of the options the Nest layer adds to the core's (whose defaults are `DEFAULT_OPTIONS`).
 * - `connectTimeout`: how long application start-up waits for the nodes to connect, in ms. Unreachable
 *   nodes only cost this once: the app boots anyway and logs a warning.
 * - `shutdownTimeout`: how long `app.close()` spends releasing locks still held, in ms; locks not released
 *   by then expire with their ttl.
 * - `busyFilter`: whether `LockBusyFilter` is registered globally (409 Conflict over HTTP).
 */
export const DEFAULT_MODULE_OPTIONS = Object.freeze({
  connectTimeout: 2_000,
  shutdownTimeout: 2_000,
  busyFilter: true,
});

/** The module options handled here; everything else goes to the core `Redlock` constructor. */
export const MODULE_ONLY_OPTION_KEYS: readonly string[] = Object.freeze([
  'nodes',
  'logger',
  'connectTimeout',
  'shutdownTimeout',
]);
