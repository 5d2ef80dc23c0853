import { Body, Controller, Get, Param, Post } from '@nestjs/common';
import { StockRepository } from '../database/stock.repository';
import { parseSku, unknownSku } from './orders.errors';
import { OrdersService, Sale } from './orders.service';

@Controller()
export class OrdersController {
  constructor(
    private readonly orders: OrdersService,
    private readonly stock: StockRepository,
  ) {}

  /** `POST /orders { "sku": "widget" }` → 201 with the sale, 409 busy or stale, 410 sold out, 404 unknown. */
  @Post('orders')
  purchase(@Body() body: { sku?: unknown } | undefined): Promise<Sale> {
    return this.orders.purchase(parseSku(body?.sku));
  }

  /** `GET /stock/widget` → units left, sales recorded, and the last fencing token that wrote the row. */
  @Get('stock/:sku')
  level(@Param('sku') sku: string) {
    const row = this.stock.find(parseSku(sku));
    if (!row) throw unknownSku(sku);
    return { ...row, sold: this.stock.soldCount(sku) };
  }
}
