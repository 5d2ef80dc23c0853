/**
 * One application instance of the scheduled-ticks test, in its own OS process: a Nest application context
 * with ScheduleModule and RedlockModule, and one scheduled job whose timer fires `SKEW_MS` late (a wrapper
 * between @Cron/@Interval and @Locked waits that long, as a late timer would). Every firing of the timer
 * and every run of the body is appended to `LOG` as one JSON line; every firing is also sent to the parent
 * (`{ fired }`), which watches the ticks go by. Stops when the parent sends 'stop'.
 */
import 'reflect-metadata';
import * as fs from 'node:fs';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, Interval, ScheduleModule } from '@nestjs/schedule';
import { Locked, RedlockModule } from '../../../lib';
import { delay as sleep } from '../../support/waits';

const env = process.env;
const instance = Number(env.INSTANCE);
const skew = Number(env.SKEW_MS ?? 0);
const bodyMs = Number(env.BODY_MS ?? 0);
const oncePerTick = env.ONCE_PER_TICK !== '0';
const log = env.LOG!;

/** When this instance's timer really fired (before the simulated lateness). */
let firedAt = 0;

/** This instance's timer fires `skew` ms late. */
function LateTimer(): MethodDecorator {
  return (_target, _key, descriptor: PropertyDescriptor) => {
    const locked = descriptor.value as (...args: unknown[]) => Promise<unknown>;
    descriptor.value = async function (this: unknown, ...args: unknown[]) {
      firedAt = Date.now();
      fs.appendFileSync(log, `${JSON.stringify({ instance, attempt: firedAt })}\n`);
      process.send!({ fired: firedAt }); // the parent watches the ticks go by
      await sleep(skew);
      // When the lock was really asked for: the skew plus whatever a loaded machine added to it.
      fs.appendFileSync(log, `${JSON.stringify({ instance, lockedAfter: firedAt, at: Date.now() })}\n`);
      return locked.apply(this, args);
    };
    return descriptor;
  };
}

async function body(): Promise<void> {
  const start = Date.now();
  const fired = firedAt;
  if (bodyMs > 0) await sleep(bodyMs);
  fs.appendFileSync(log, `${JSON.stringify({ instance, firedAt: fired, start, end: Date.now() })}\n`);
}

@Injectable()
class CronJob {
  @Cron('* * * * * *')
  @LateTimer()
  @Locked('tick:cron', { oncePerTick })
  async tick(): Promise<void> {
    await body();
  }
}

@Injectable()
class IntervalJob {
  @Interval(1000)
  @LateTimer()
  @Locked('tick:interval', { oncePerTick })
  async tick(): Promise<void> {
    await body();
  }
}

async function main(): Promise<void> {
  @Module({
    imports: [
      ScheduleModule.forRoot(),
      RedlockModule.forRoot(JSON.parse(env.NODES!) as string[], { logger: false, restartGuard: false }),
    ],
    providers: [env.JOB === 'interval' ? IntervalJob : CronJob],
  })
  class AppModule {}

  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  process.on('message', (message) => {
    if (message !== 'stop') return;
    void app.close().then(() => process.exit(0));
  });
  process.send!('ready');
}

void main();
