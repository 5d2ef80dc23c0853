import { Command } from 'ioredis';
import { respOf } from '../../lib/redis/ioredis/resp-command';

/** The library writes its script calls itself (one flat string): the bytes must be ioredis' own. */
describe('respOf writes what ioredis writes', () => {
  const cases: [string, string[]][] = [
    ['evalsha', ['0d312bdc6ab9d129435695793ce840f6b72c314d', '3', 'redlock:{order:42}', 'a:b', '', '10000']],
    ['eval', ["return redis.call('GET', KEYS[1])", '1', 'zürich-ö-€-日本', '🔒']],
    ['evalsha', ['x'.repeat(1023), 'y'.repeat(1024), 'é'.repeat(600), '\r\n$3\r\n']],
    ['evalsha', []],
  ];

  it.each(cases)('%s with %j', (name, args) => {
    const own = new Command(name, args).toWritable(undefined as never);
    const ours = respOf(name, args);
    expect(Buffer.from(ours, 'utf8')).toEqual(Buffer.isBuffer(own) ? own : Buffer.from(own, 'utf8'));
  });

  it('control: a length counted in characters, not bytes, differs from ioredis', () => {
    const args = ['zürich'];
    const own = new Command('evalsha', args).toWritable(undefined as never);
    const byChars = `*2\r\n$7\r\nevalsha\r\n$${args[0].length}\r\n${args[0]}\r\n`;
    expect(byChars).not.toEqual(own);
  });
});
