import * as path from 'node:path';
import { TreeBuild, transpileTree } from '../../support/transpile-tree';

/** A transpiled copy of the client and everything it imports from this repository. */
export type ClientBuild = TreeBuild;

/** The chaos client as plain JavaScript, so each of the six client processes starts as plain Node. */
export function buildClient(): ClientBuild {
  return transpileTree(path.join(__dirname, 'client.ts'), 'chaos-client');
}
