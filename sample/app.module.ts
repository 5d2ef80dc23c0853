import { DynamicModule, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { TerminusModule } from '@nestjs/terminus';
import { RedlockModule } from '../lib';
import { ExportRunsRepository } from './database/export-runs.repository';
import { ReportRunsRepository } from './database/report-runs.repository';
import { sampleDatabaseProvider } from './database/sample-database';
import { StockRepository } from './database/stock.repository';
import { ExportsController } from './exports/exports.controller';
import { ZombieController } from './fencing/zombie.controller';
import { ZombieService } from './fencing/zombie.service';
import { HealthController } from './health/health.controller';
import { OrdersController } from './orders/orders.controller';
import { OrdersService } from './orders/orders.service';
import { ReportJob } from './report/report.job';
import { SAMPLE_CONFIG, SampleConfig } from './sample.config';

@Module({})
export class AppModule {
  static register(config: SampleConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ScheduleModule.forRoot(),
        TerminusModule,
        RedlockModule.forRoot(config.redisNodes, {
          ttl: config.lockTtl,
          // Set to the largest ttl in use: a node that restarted empty takes part only after it.
          restartGuard: config.restartGuard,
          nodeTimeout: config.nodeTimeout,
        }),
      ],
      controllers: [OrdersController, HealthController, ZombieController, ExportsController],
      providers: [
        { provide: SAMPLE_CONFIG, useValue: config },
        sampleDatabaseProvider,
        StockRepository,
        ReportRunsRepository,
        ExportRunsRepository,
        OrdersService,
        ZombieService,
        ReportJob,
      ],
    };
  }
}
