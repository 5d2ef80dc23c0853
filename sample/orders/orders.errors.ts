import {
  BadRequestException,
  ConflictException,
  HttpException,
  HttpStatus,
  NotFoundException,
} from '@nestjs/common';

/** 410 Gone: the SKU exists but has no stock left. */
export class SoldOutException extends HttpException {
  constructor(sku: string) {
    super(
      { statusCode: HttpStatus.GONE, error: 'Gone', message: `"${sku}" is sold out.`, sku },
      HttpStatus.GONE,
    );
  }
}

/** 409: the request carried an older fencing token than one the stock row has already seen. */
export class StaleTokenException extends ConflictException {
  constructor(sku: string, token: number, rowToken: number) {
    super({
      statusCode: HttpStatus.CONFLICT,
      error: 'Conflict',
      message:
        `Rejected by fencing token: a newer holder of "sku:${sku}" claimed the stock (token ${rowToken}); ` +
        `this request carried ${token}. Its lock had expired.`,
      reason: 'stale-token',
    });
  }
}

export const unknownSku = (sku: string) => new NotFoundException(`No stock row for "${sku}".`);

const SKU = /^[A-Za-z0-9_-]{1,64}$/;

/** A SKU from a request body: 1–64 letters, digits, `_` or `-`. */
export function parseSku(value: unknown): string {
  if (typeof value !== 'string' || !SKU.test(value)) {
    throw new BadRequestException('Send { "sku": "<1-64 letters, digits, _ or ->" }.');
  }
  return value;
}
