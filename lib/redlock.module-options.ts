import { Logger } from '@nestjs/common';
import {
  InvalidArgumentError,
  OptionsKind,
  REDLOCK_OPTION_KEYS,
  RedlockOptions,
  describe,
  durationProblem,
  loggerMethods,
  readOptions,
} from './core';
import { NodeSpec, Redlock } from './redis';
import { DEFAULT_MODULE_OPTIONS, LOGGER_CONTEXT, MODULE_ONLY_OPTION_KEYS } from './redlock.constants';
import type { RedlockModuleOptions } from './redlock.interfaces';
import * as messages from './redlock.messages';

/** Where the Nest layer writes; `debug` may be a no-op. */
export interface LogSink {
  warn(message: string): void;
  debug(message: string): void;
}

/** The module options, validated, with the core instance built from them. */
export interface ResolvedModuleOptions {
  readonly redlock: Redlock;
  readonly log: LogSink | undefined;
  readonly connectTimeout: number;
  readonly shutdownTimeout: number;
}

/**
 * Validates the module options and creates the core instance. Nest-level keys are handled here; every
 * other key is passed to the core as it is read here, so options added to the core later need no change
 * here (the accepted keys are the core's and the module's: {@link MODULE_OPTIONS}).
 */
export function resolveModuleOptions(options: RedlockModuleOptions): ResolvedModuleOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw invalid(
      `expected an object like { nodes: ['redis://...'], ttl: 10000 }, got ${describe(options)}. ` +
        'Check what the forRootAsync factory returns.',
    );
  }
  const { nodes, logger, connectTimeout, shutdownTimeout, ...coreOptions } = readModuleOptions(options);
  if (Object.prototype.hasOwnProperty.call(coreOptions, 'busyFilter'))
    throw invalid(messages.busyFilterInFactory());
  if (nodes === undefined) {
    throw invalid(
      "`nodes` is missing: list the Redis nodes, e.g. nodes: ['redis://10.0.0.1:6379', 'redis://10.0.0.2:6379', " +
        "'redis://10.0.0.3:6379'].",
    );
  }
  const log = logSinkOf(logger);
  const resolved = {
    connectTimeout: milliseconds(connectTimeout, 'connectTimeout', DEFAULT_MODULE_OPTIONS.connectTimeout, 1),
    shutdownTimeout: milliseconds(
      shutdownTimeout,
      'shutdownTimeout',
      DEFAULT_MODULE_OPTIONS.shutdownTimeout,
      0,
    ),
  };
  const core: RedlockOptions = { ...(coreOptions as RedlockOptions), logger: log ?? false };
  return { ...resolved, log, redlock: createRedlock(nodes as readonly NodeSpec[] | string, core) };
}

/**
 * The keys `RedlockModule` accepts: the core's options, the module's own and `busyFilter` (read when the
 * module is assembled; refused in a factory's result, with where it goes).
 */
const MODULE_OPTIONS: OptionsKind = {
  name: 'RedlockModule options',
  option: 'RedlockModule option',
  known: new Set([...REDLOCK_OPTION_KEYS, ...MODULE_ONLY_OPTION_KEYS, 'busyFilter']),
};

/**
 * The module options read once ({@link readOptions}: own keys, each value read once, no `__proto__`, no
 * unknown key), as the module's message. `forRoot` reads them before Nest's module builder copies them: its
 * copy turns a `__proto__` key from JSON into the copy's prototype, dropping it silently.
 */
export function readModuleOptions(options: unknown): Record<string, unknown> {
  try {
    return readOptions(options, MODULE_OPTIONS);
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw invalid(error.message);
    throw error;
  }
}

function createRedlock(nodes: readonly NodeSpec[] | string, options: RedlockOptions): Redlock {
  try {
    return new Redlock(nodes, options);
  } catch (error) {
    if (!(error instanceof InvalidArgumentError)) throw error;
    throw invalid(error.message);
  }
}

function logSinkOf(logger: unknown): LogSink | undefined {
  if (logger === false) return undefined;
  if (logger === undefined) {
    const nest = new Logger(LOGGER_CONTEXT);
    return { warn: (message) => nest.warn(message), debug: (message) => nest.debug(message) };
  }
  const refuse = (got: string) =>
    invalid(
      `logger must be false or a Nest LoggerService (an object with warn(message, context)), got ${got}. ` +
        "Leave it out for Nest's Logger (context 'Redlock'), or pass false for silence.",
    );
  // Called on the logger given; a debug that is not a function is left out (a LoggerService may lack it).
  const { warn, debug } = loggerMethods(logger, refuse, (error) =>
    refuse(`an object whose warn or debug could not be read (${String(error)})`),
  );
  const call = (method: unknown) => (message: string) =>
    typeof method === 'function' ? void Reflect.apply(method, logger, [message, LOGGER_CONTEXT]) : undefined;
  return { warn: call(warn), debug: call(debug) };
}

function milliseconds(value: unknown, name: string, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  const problem = durationProblem(value, name, min);
  if (problem !== undefined) throw invalid(`${problem} Default: ${fallback}.`);
  return value as number;
}

function invalid(problem: string): InvalidArgumentError {
  return new InvalidArgumentError(messages.badModuleOptions(problem));
}
