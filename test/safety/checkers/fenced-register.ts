/**
 * A resource that checks fencing tokens, as a database row guarded by `UPDATE ... WHERE last_token < :token`
 * would: a write carrying a token not larger than the last accepted one is rejected.
 */
export class FencedRegister<T> {
  private lastToken = -Infinity;
  value: T | undefined;
  readonly rejected: { token: number; value: T }[] = [];

  write(token: number, value: T): boolean {
    if (!(token > this.lastToken)) {
      this.rejected.push({ token, value });
      return false;
    }
    this.lastToken = token;
    this.value = value;
    return true;
  }
}
