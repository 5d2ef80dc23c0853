import * as path from 'node:path';
import { TreeBuild, transpileTree } from '../../support/transpile-tree';

/** The worker thread's entry point as plain JavaScript, and how to remove it. */
export type WorkerBuild = TreeBuild;

/** The simulation's worker entry as plain JavaScript (packages resolve through a linked node_modules). */
export function buildWorker(): WorkerBuild {
  return transpileTree(path.join(__dirname, 'worker-main.ts'), 'sim', true);
}
