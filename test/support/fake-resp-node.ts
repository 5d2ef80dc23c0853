import * as net from 'node:net';

/** A value a fake node answers with: RESP integer, bulk string, array, nil, or an error. */
export type RespValue = number | string | null | RespValue[] | { error: string };

/** Decides the reply to one command (name lower-cased, then its arguments); undefined → the default reply. */
/** What a handler returns for a command the node never answers (a SUBSCRIBE left unconfirmed). */
export const NO_REPLY = Symbol('no reply');

export type RespHandler = (command: string, args: string[]) => RespValue | typeof NO_REPLY | undefined;

export interface FakeRespNode {
  readonly port: number;
  readonly url: string;
  /** Every command received, as `[name, ...args]`. */
  readonly commands: string[][];
  /** Connections currently open. */
  readonly connections: number;
  /** Resolves once every connection to it has closed on its side (its own sockets are handles too). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A tiny TCP server speaking just enough RESP for ioredis to take it for a Redis node: INFO (ready check,
 * run_id, uptime), PING, QUIT (OK, then it closes the connection), OK for anything else — and whatever
 * `handler` says, for hostile-node tests.
 */
export async function startFakeRespNode(handler: RespHandler): Promise<FakeRespNode> {
  const commands: string[][] = [];
  const sockets = new Set<net.Socket>();
  const idlers: (() => void)[] = [];
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      if (sockets.size === 0) for (const idle of idlers.splice(0)) idle();
    });
    socket.on('error', () => undefined);
    let buffer = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const parsed = parseCommand(buffer);
        if (!parsed) break;
        buffer = buffer.subarray(parsed.length);
        const [name, ...args] = parsed.command;
        commands.push(parsed.command);
        const chosen = handler(name.toLowerCase(), args);
        if (chosen === NO_REPLY) continue;
        const reply = chosen === undefined ? defaultReply(name.toLowerCase(), args) : chosen;
        socket.write(encode(reply));
        // As Redis does: QUIT answered, then the connection closed (a handler's own QUIT reply keeps it open).
        if (chosen === undefined && name.toLowerCase() === 'quit') socket.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    commands,
    get connections() {
      return sockets.size;
    },
    idle: () =>
      sockets.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => idlers.push(resolve)),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function defaultReply(command: string, args: string[]): RespValue {
  if (command === 'info') {
    return '# Server\r\nredis_version:7.0.0\r\nrun_id:fakefakefake\r\nuptime_in_seconds:100000\r\nloading:0\r\n';
  }
  if (command === 'ping') return 'PONG';
  if (command === 'subscribe') return ['subscribe', args[0] ?? '', 1];
  return 'OK';
}

/** One command (a RESP array of bulk strings) from the start of `buffer`, or undefined if incomplete. */
function parseCommand(buffer: Buffer): { command: string[]; length: number } | undefined {
  let offset = 0;
  const line = (): string | undefined => {
    const end = buffer.indexOf('\r\n', offset);
    if (end < 0) return undefined;
    const text = buffer.toString('utf8', offset, end);
    offset = end + 2;
    return text;
  };
  const header = line();
  if (header === undefined) return undefined;
  if (!header.startsWith('*')) return { command: header.split(' '), length: offset }; // inline command
  const count = Number(header.slice(1));
  const command: string[] = [];
  for (let i = 0; i < count; i++) {
    const size = line();
    if (size === undefined) return undefined;
    const bytes = Number(size.slice(1));
    if (buffer.length < offset + bytes + 2) return undefined;
    command.push(buffer.toString('utf8', offset, offset + bytes));
    offset += bytes + 2;
  }
  return { command, length: offset };
}

function encode(value: RespValue): string {
  if (value === null) return '$-1\r\n';
  if (typeof value === 'number') return `:${value}\r\n`;
  if (typeof value === 'string') return `$${Buffer.byteLength(value)}\r\n${value}\r\n`;
  if (Array.isArray(value)) return `*${value.length}\r\n${value.map(encode).join('')}`;
  return `-${value.error}\r\n`;
}
