import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { transpileTree } from '../../support/transpile-tree';
import { enterCalls } from './instrument';
import type { RouteRecording } from './one-call';

const LIB = path.resolve(__dirname, '..', '..', '..', 'lib');

/**
 * Records the route of one uncontended `@Locked` call (`one-call.ts`): transpiles it and what it imports, lib/
 * instrumented with {@link enterCalls}, runs it in a child process, and returns what it printed.
 */
export function recordRoute(): RouteRecording {
  const build = transpileTree(path.join(__dirname, 'one-call.ts'), 'route', false, (file) =>
    file.startsWith(`${LIB}${path.sep}`)
      ? { before: [enterCalls(path.relative(LIB, file).split(path.sep).join('/'))] }
      : undefined,
  );
  try {
    const out = execFileSync(process.execPath, [build.entry], {
      env: { ...process.env, NODE_PATH: build.nodePath },
      encoding: 'utf8',
      timeout: 30_000,
    });
    return JSON.parse(out.trim().split('\n').pop()!) as RouteRecording;
  } finally {
    build.dispose();
  }
}
