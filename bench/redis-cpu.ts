import type Redis from 'ioredis';
import type { RedisNodes } from '../test/support';

/** CPU seconds (user + system) the given nodes have used since they started, summed (INFO cpu). */
export async function redisCpuSeconds(admins: readonly Redis[]): Promise<number> {
  const infos = await Promise.all(admins.map((admin) => admin.info('cpu')));
  let total = 0;
  for (const info of infos) {
    const sys = Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1] ?? 0);
    const user = Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1] ?? 0);
    total += sys + user;
  }
  return total;
}

/** Admin clients to the first `count` nodes, for CPU readings; the caller disconnects them. */
export function adminClients(nodes: RedisNodes, count: number): Redis[] {
  return nodes.nodes.slice(0, count).map((node) => node.redis());
}

/** Client (this process) and Redis CPU used while `work` runs, in µs, next to its result. */
export async function measureCpu<T>(
  admins: readonly Redis[],
  work: () => Promise<T>,
): Promise<{ result: T; clientUs: number; redisUs: number }> {
  const redis0 = await redisCpuSeconds(admins);
  const cpu0 = process.cpuUsage();
  const result = await work();
  const cpu = process.cpuUsage(cpu0);
  const redisUs = ((await redisCpuSeconds(admins)) - redis0) * 1e6;
  return { result, clientUs: cpu.user + cpu.system, redisUs };
}
