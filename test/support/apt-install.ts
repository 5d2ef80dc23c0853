import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { findOnPath } from './find-binary';

/** True when we may install redis-server ourselves: root on Debian/Ubuntu with apt-get. */
export function canAptInstall(): boolean {
  return (
    process.getuid?.() === 0 && fs.existsSync('/etc/debian_version') && findOnPath('apt-get') !== undefined
  );
}

/** apt-get install redis-server, saying so on the console; returns the installed binary's path. */
export function aptInstallRedis(): string {
  console.log(
    '[test/support] redis-server not found: running `apt-get update && apt-get install -y redis-server` (as root)',
  );
  // DPkg lock timeout: parallel Jest workers may all land here at once; let them queue instead of failing.
  const result = spawnSync(
    'sh',
    ['-c', 'apt-get update && apt-get install -y -o DPkg::Lock::Timeout=300 redis-server'],
    { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } },
  );
  const bin = findOnPath('redis-server') ?? findOnPath('redis-server', '/usr/bin:/usr/sbin');
  if (result.status !== 0 || !bin) {
    throw new Error(
      `apt-get install redis-server failed (exit ${result.status ?? result.signal}). ` +
        'Install redis-server yourself, or set REDLOCK_TEST_NODES to comma-separated redis:// URLs.',
    );
  }
  return bin;
}
