/**
 * One instance of the sample: `node -r ts-node/register/transpile-only sample/main.ts`, configured by
 * the environment (see sample.config.ts). `npm run demo` starts three of them against five Redis nodes.
 */
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';
import { StockRepository } from './database/stock.repository';
import { loadConfig } from './sample.config';

async function bootstrap(): Promise<void> {
  const config = loadConfig();
  const app = await NestFactory.create(AppModule.register(config), {
    logger: ['error', 'warn', 'log'],
  });
  app.enableShutdownHooks();
  // A first SKU to try by hand; the demo stocks its own.
  app.get(StockRepository).seed('widget', 10);
  await app.listen(config.port, '127.0.0.1');
  new Logger('Sample').log(
    `${config.instance} listening on http://127.0.0.1:${config.port} — lock ${
      config.lockDisabled ? 'DISABLED' : 'on'
    }, ${config.redisNodes.length} Redis nodes, db ${config.dbFile}`,
  );
}

bootstrap().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
