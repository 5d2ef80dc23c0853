import 'reflect-metadata';
import { Cron, Interval, Timeout } from '@nestjs/schedule';
import { marginOf, scheduleOf } from '../../lib/locked/scheduled-tick';

/** How long a scheduled run keeps its lock, computed from @nestjs/schedule's own metadata (pure). */
class Jobs {
  @Cron('* * * * * *') everySecond() {}
  @Cron('0 9 * * *', { timeZone: 'America/New_York' }) nineInNewYork() {}
  @Cron('0 */10 * * * *', { utcOffset: 330 }) tenMinutesInIndia() {}
  @Cron(new Date('2030-01-01T00:00:00Z')) once() {}
  @Interval(1_000) interval() {}
  @Timeout(5_000) timeout() {}
  plain() {}
}
const proto = Jobs.prototype as unknown as Record<string, unknown>;
const T = Date.UTC(2026, 11, 1, 12, 0, 0); // a whole second

describe('scheduled ticks: schedule read from @nestjs/schedule metadata', () => {
  it('no schedule on a plain method', () => {
    expect(scheduleOf(proto.plain)).toBeUndefined();
  });

  it('cron every second: kept until the margin before the next tick, whenever it fired and ended', () => {
    const s = scheduleOf(proto.everySecond)!;
    expect(s.description).toBe("cron '* * * * * *'");
    expect(marginOf(1_000)).toBe(250);
    expect(s.holdUntil(T, T + 5)).toBe(T + 750); // on time, instant body
    expect(s.holdUntil(T - 1, T)).toBe(T + 750); // a timer 1 ms early serves the same tick
    expect(s.holdUntil(T + 600, T + 601)).toBe(T + 750); // 600 ms late: still this tick
    expect(s.holdUntil(T + 1, T + 1_500)).toBe(T + 1_750); // a body longer than the period skips the next tick
    expect(s.holdUntil(T + 1, T + 900)).toBe(T + 750); // ended inside the margin: released, the next tick runs
    expect(s.wait).toBe(125);
  });

  it('cron with a time zone: the next tick in that zone', () => {
    const s = scheduleOf(proto.nineInNewYork)!;
    const firedAt = Date.UTC(2026, 11, 1, 14, 0, 0); // 09:00 in New York (EST, UTC−5)
    expect(s.holdUntil(firedAt, firedAt + 10)).toBe(Date.UTC(2026, 11, 2, 14, 0, 0) - 1_000);
  });

  it('cron with a utcOffset (minutes): the next tick at that offset', () => {
    const s = scheduleOf(proto.tenMinutesInIndia)!;
    const firedAt = Date.UTC(2026, 11, 1, 12, 0, 0);
    expect(s.holdUntil(firedAt, firedAt + 10)).toBe(Date.UTC(2026, 11, 1, 12, 10, 0) - 1_000);
  });

  it('a one-off cron date keeps its lock a minute past it', () => {
    const s = scheduleOf(proto.once)!;
    const at = Date.UTC(2030, 0, 1);
    expect(s.holdUntil(at + 3, at + 10)).toBe(at + 10 + 60_000);
  });

  it('@Interval and @Timeout: one period of the instance that ran it', () => {
    const interval = scheduleOf(proto.interval)!;
    expect(interval.description).toBe('interval 1000 ms');
    expect(interval.holdUntil(T + 123, T + 130)).toBe(T + 123 + 750);
    expect(interval.holdUntil(T, T + 2_500)).toBe(T + 3_000 - 250); // outlasted two periods
    const timeout = scheduleOf(proto.timeout)!;
    expect(timeout.holdUntil(T, T + 1)).toBe(T + 5_000 - 1_000);
  });
});
