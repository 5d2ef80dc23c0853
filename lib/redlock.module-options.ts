import { Logger, LoggerService } from '@nestjs/common';
import { InvalidArgumentError, RedlockOptions, UnknownOptionError, describe, durationProblem } from './core';
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
 * other key is passed to the core as it is, so options added to the core later need no change here (and a
 * misspelt one is still refused, by the core, with the module's own keys added to its message).
 */
export function resolveModuleOptions(options: RedlockModuleOptions): ResolvedModuleOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw invalid(
      `expected an object like { nodes: ['redis://...'], ttl: 10000 }, got ${describe(options)}. ` +
        'Check what the forRootAsync factory returns.',
    );
  }
  const { nodes, logger, connectTimeout, shutdownTimeout, ...coreOptions } = options;
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
  return { ...resolved, log, redlock: createRedlock(nodes, core) };
}

function createRedlock(nodes: readonly NodeSpec[] | string, options: RedlockOptions): Redlock {
  try {
    return new Redlock(nodes, options);
  } catch (error) {
    if (!(error instanceof InvalidArgumentError)) throw error;
    let message = messages.badModuleOptions(error.message);
    if (error instanceof UnknownOptionError) {
      message += messages.moduleAlsoAccepts(
        MODULE_ONLY_OPTION_KEYS.filter((key) => !error.known.includes(key)),
      );
    }
    throw new InvalidArgumentError(message);
  }
}

function logSinkOf(logger: unknown): LogSink | undefined {
  if (logger === false) return undefined;
  if (logger === undefined) {
    const nest = new Logger(LOGGER_CONTEXT);
    return { warn: (message) => nest.warn(message), debug: (message) => nest.debug(message) };
  }
  const custom = logger as Partial<LoggerService>;
  if (logger === null || typeof logger !== 'object' || typeof custom.warn !== 'function') {
    throw invalid(`logger must be false or a Nest LoggerService, got ${describe(logger)}.`);
  }
  return {
    warn: (message) => custom.warn!(message, LOGGER_CONTEXT),
    debug: (message) => custom.debug?.(message, LOGGER_CONTEXT),
  };
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
