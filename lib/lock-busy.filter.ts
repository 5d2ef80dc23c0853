import {
  ArgumentsHost,
  Catch,
  ConflictException,
  HttpException,
  ServiceUnavailableException,
} from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { throwError } from 'rxjs';
import { LockBusyError, QuorumUnavailableError } from './core';
import * as messages from './redlock.messages';

/**
 * Answers lock failures that escaped a handler the way clients expect: a `LockBusyError` (another operation
 * holds the lock) as `409 Conflict`, a `QuorumUnavailableError` (too few Redis nodes could take the lock) as
 * `503 Service Unavailable` with `Retry-After` when the library knows when it may succeed (the restart
 * guard's window). Messages name the resource, never the nodes. Registered globally by `RedlockModule`
 * unless `busyFilter: false`; to use it yourself:
 * `app.useGlobalFilters(new LockBusyFilter(app.get(HttpAdapterHost).httpAdapter))`.
 *
 * Other transports get what their own exception handling does with a message: microservices an error
 * `{ status: 'error', message, statusCode }` (like an `RpcException`), websockets an `exception` event with
 * the same payload; any other context (e.g. GraphQL) gets the original error rethrown.
 */
@Catch(LockBusyError, QuorumUnavailableError)
export class LockBusyFilter extends BaseExceptionFilter {
  override catch(error: LockBusyError | QuorumUnavailableError, host: ArgumentsHost): unknown {
    const busy = error instanceof LockBusyError;
    const message = busy ? messages.conflict(error.resources) : messages.unavailable(error.resources);
    const statusCode = busy ? 409 : 503;
    switch (host.getType<string>()) {
      case 'http':
        if (!busy && error.retryAfter !== undefined) this.setRetryAfter(host, error.retryAfter);
        return super.catch(httpException(busy, message, error), host);
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

function httpException(busy: boolean, message: string, cause: Error): HttpException {
  return busy
    ? new ConflictException(message, { cause, description: 'Conflict' })
    : new ServiceUnavailableException(message, { cause, description: 'Service Unavailable' });
}
