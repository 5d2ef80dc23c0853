import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Runtime } from './app';
import { Ran, run } from './proc';

/**
 * The other toolchains and runtimes a row can use, installed once from npm into `<work>/tools` (not into the
 * apps, so the apps keep TypeScript ~5.9): `typescript@7` (its `tsc` is the native compiler, a Go binary from
 * `@typescript/typescript-<platform>`; the package has no JavaScript compiler API), `bun` and `deno` (each a
 * native binary from an optional platform package; their postinstall scripts are not needed).
 */
export interface Tools {
  readonly ran: Ran;
  /** The TypeScript 7 `tsc` and its version (`7.0.2`), when installed. */
  readonly tsc7?: { readonly path: string; readonly version: string };
  readonly bun?: Runtime & { readonly version: string };
  readonly deno?: Runtime & { readonly version: string };
}

export const TOOL_SPECS = ['typescript@7', 'bun', 'deno'];

/** Installs the tools into `dir`; the ones that did not install (or do not start) are left out. */
export async function installTools(dir: string): Promise<Tools> {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), '{ "name": "compat-tools", "private": true }\n');
  const ran = await run('npm', ['install', '--no-audit', '--no-fund', ...TOOL_SPECS], {
    cwd: dir,
    timeoutMs: 5 * 60_000,
  });
  const bin = (name: string) => path.join(dir, 'node_modules', '.bin', name);
  // Each tool says its own version: proof that its native binary starts here.
  const version = async (name: string, pattern: RegExp) => {
    if (!fs.existsSync(bin(name))) return undefined;
    const out = await run(bin(name), ['--version'], { cwd: dir, timeoutMs: 30_000 });
    return out.code === 0 ? pattern.exec(out.stdout)?.[1] : undefined;
  };
  const tsc = await version('tsc', /Version (\S+)/);
  const bun = await version('bun', /^(\S+)/);
  const deno = await version('deno', /deno (\S+)/);
  return {
    ran,
    tsc7: tsc?.startsWith('7.') ? { path: bin('tsc'), version: tsc } : undefined,
    bun: bun ? { command: bin('bun'), args: [], version: bun } : undefined,
    deno: deno ? { command: bin('deno'), args: ['run', '-A'], version: deno } : undefined,
  };
}
