/** `$<n>` for the byte lengths most arguments have, made once instead of for every argument sent. */
const LENGTH_HEADERS = Array.from({ length: 1024 }, (_, n) => `$${n}`);

function lengthHeader(bytes: number): string {
  return bytes < LENGTH_HEADERS.length ? LENGTH_HEADERS[bytes] : `$${bytes}`;
}

/**
 * A command as Redis reads it (RESP: an array of bulk strings): the bytes ioredis' `Command.toWritable` writes
 * for string arguments, made with one `join` into one flat string. ioredis appends each argument to the string
 * built so far, a chain of short-lived strings per argument that the socket write then copies flat; at 10
 * commands per lock cycle that chain was the largest allocation of the client.
 */
export function respOf(name: string, args: readonly string[]): string {
  const parts = new Array<string>(2 * args.length + 4);
  parts[0] = `*${args.length + 1}`;
  parts[1] = lengthHeader(Buffer.byteLength(name));
  parts[2] = name;
  let k = 3;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    parts[k++] = lengthHeader(Buffer.byteLength(arg));
    parts[k++] = arg;
  }
  // The join's last separator ends the last argument.
  parts[k] = '';
  return parts.join('\r\n');
}
