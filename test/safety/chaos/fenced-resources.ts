import { FencedRegister } from '../checkers/fenced-register';

/** A fenced write the register turned down. */
export interface Rejection {
  readonly t: number;
  readonly client: number;
  readonly resource: string;
  readonly token: number;
}

/**
 * The protected resources of one phase, held by the parent: one {@link FencedRegister} per resource, as a
 * database row guarded by its last token would be. Clients write to them over IPC from inside their
 * critical sections and wait for the answer, so writes reach a register in the order the sections ran.
 */
export class FencedResources {
  private readonly registers = new Map<string, FencedRegister<number>>();
  readonly rejections: Rejection[] = [];
  writes = 0;

  constructor(private readonly now: () => number) {}

  /** Resolves whether `token` was larger than every token the resource accepted before. */
  write(client: number, resource: string, token: number): boolean {
    let register = this.registers.get(resource);
    if (!register) this.registers.set(resource, (register = new FencedRegister<number>()));
    this.writes++;
    const accepted = register.write(token, client);
    if (!accepted) this.rejections.push({ t: this.now(), client, resource, token });
    return accepted;
  }
}
