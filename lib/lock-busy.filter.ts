import { ArgumentsHost, Catch, ConflictException } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { throwError } from 'rxjs';
import { LockBusyError } from './core';
import * as messages from './redlock.messages';

/**
 * Answers a `LockBusyError` that escaped a handler as `409 Conflict` over HTTP, with a message naming the
 * resource (not the nodes). Registered globally by `RedlockModule` unless `busyFilter: false`; to use it
 * yourself: `app.useGlobalFilters(new LockBusyFilter(app.get(HttpAdapterHost).httpAdapter))`.
 *
 * Other transports get what their own exception handling does with a message: microservices an error
 * `{ status: 'error', message }` (like an `RpcException`), websockets an `exception` event with the same
 * payload; any other context (e.g. GraphQL) gets the original error rethrown, as if no filter applied.
 */
@Catch(LockBusyError)
export class LockBusyFilter extends BaseExceptionFilter {
  override catch(error: LockBusyError, host: ArgumentsHost): unknown {
    const message = messages.conflict(error.resources);
    switch (host.getType<string>()) {
      case 'http':
        return super.catch(new ConflictException(message, { cause: error, description: 'Conflict' }), host);
      case 'rpc':
        return throwError(() => ({ status: 'error', message }));
      case 'ws': {
        const client = host.switchToWs().getClient<{ emit?: (event: string, data: unknown) => void }>();
        if (typeof client?.emit !== 'function') throw error;
        client.emit('exception', { status: 'error', message });
        return undefined;
      }
      default:
        throw error;
    }
  }
}
