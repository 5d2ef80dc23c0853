import {
  ArgumentsHost,
  Catch,
  ConflictException,
  HttpException,
  HttpStatus,
  ServiceUnavailableException,
} from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { throwError } from 'rxjs';
import {
  LockBusyError,
  LockLostError,
  LockQueueFullError,
  LockRevokedError,
  PermitCountMismatchError,
  QuorumUnavailableError,
  ShutdownError,
} from './core';
import * as messages from './redlock.messages';

/**
 * Answers lock failures that escaped a handler the way clients expect, naming the resource, never the nodes:
 *
 * | error | status |
 * | --- | --- |
 * | `LockQueueFullError` (`maxWaiting` callers already wait for the lock: refused at once) | 429 Too Many Requests, `Retry-After: 1` |
 * | `LockBusyError` (another operation holds the lock) | 409 Conflict |
 * | `QuorumUnavailableError` (too few Redis nodes could take the lock) | 503, with `Retry-After` when the restart guard says when |
 * | `LockLostError`, `LockRevokedError` (the lock was lost or revoked while the handler ran) | 503 |
 * | `ShutdownError` (the application is shutting down) | 503 |
 * | `PermitCountMismatchError` (callers of a semaphore disagree on its number of permits) | 503 |
 *
 * Registered globally by `RedlockModule` unless `busyFilter: false`; to use it yourself:
 * `app.useGlobalFilters(new LockBusyFilter(app.get(HttpAdapterHost).httpAdapter))`.
 *
 * Other transports get what their own exception handling does with a message: microservices an error
 * `{ status: 'error', message, statusCode }` (like an `RpcException`), websockets an `exception` event with
 * the same payload; any other context (e.g. GraphQL) gets the original error rethrown.
 */
@Catch(LockBusyError, QuorumUnavailableError, LockLostError, ShutdownError, PermitCountMismatchError)
export class LockBusyFilter extends BaseExceptionFilter {
  override catch(error: LockFailure, host: ArgumentsHost): unknown {
    const busy = error instanceof LockBusyError;
    // A subclass of LockBusyError: checked first.
    const full = error instanceof LockQueueFullError;
    const message = answerOf(error);
    const statusCode = full ? 429 : busy ? 409 : 503;
    switch (host.getType<string>()) {
      case 'http':
        if (error instanceof QuorumUnavailableError && error.retryAfter !== undefined) {
          this.setRetryAfter(host, error.retryAfter);
        }
        // The queue moves as holders release: when a place frees is not known, so "soon".
        if (full) this.setRetryAfter(host, 1_000);
        return super.catch(httpException(statusCode, message, error), host);
      case 'rpc':
        return throwError(() => ({ status: 'error', message, statusCode }));
      case 'ws': {
        const client = host.switchToWs().getClient<{ emit?: (event: string, data: unknown) => void }>();
        if (typeof client?.emit !== 'function') throw error;
        client.emit('exception', { status: 'error', message, statusCode });
        return undefined;
      }
      default:
        throw error;
    }
  }

  /** `Retry-After` in whole seconds (at least 1), through the platform's adapter (Express or Fastify). */
  private setRetryAfter(host: ArgumentsHost, ms: number): void {
    const adapter = this.httpAdapterHost?.httpAdapter ?? this.applicationRef;
    const response = host.switchToHttp().getResponse<unknown>();
    const seconds = String(Math.max(1, Math.ceil(ms / 1000)));
    if (adapter && typeof (adapter as { setHeader?: unknown }).setHeader === 'function') {
      (adapter as { setHeader(response: unknown, name: string, value: string): void }).setHeader(
        response,
        'Retry-After',
        seconds,
      );
    }
  }
}

/** The lock failures the filter answers. */
type LockFailure =
  LockBusyError | QuorumUnavailableError | LockLostError | ShutdownError | PermitCountMismatchError;

/** The answer's message: what happened to the resource, never which nodes. */
function answerOf(error: LockFailure): string {
  if (error instanceof LockQueueFullError) return messages.queueFullRequest(error.resources);
  if (error instanceof LockBusyError) return messages.conflict(error.resources);
  if (error instanceof QuorumUnavailableError) return messages.unavailable(error.resources);
  if (error instanceof LockRevokedError) return messages.revokedDuringRequest(error.resources);
  if (error instanceof LockLostError) return messages.lostDuringRequest(error.resources);
  if (error instanceof ShutdownError) return messages.shuttingDownRequest();
  return messages.permitsInFlux(error.resources);
}

function httpException(statusCode: number, message: string, cause: Error): HttpException {
  if (statusCode === 429) {
    return new HttpException(
      { statusCode, message, error: 'Too Many Requests' },
      HttpStatus.TOO_MANY_REQUESTS,
      { cause },
    );
  }
  return statusCode === 409
    ? new ConflictException(message, { cause, description: 'Conflict' })
    : new ServiceUnavailableException(message, { cause, description: 'Service Unavailable' });
}
