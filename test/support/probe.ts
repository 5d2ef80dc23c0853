import * as net from 'node:net';

/**
 * Ask the server on host:port for its pid (`INFO server` → process_id) over raw RESP: no client library,
 * no retries. Undefined on any error or timeout. Checking the pid, not just PING, matters when another
 * test process grabbed the same free port first: its server would answer PING while ours failed to bind.
 */
export function probeServerPid(
  port: number,
  host = '127.0.0.1',
  timeoutMs = 500,
): Promise<number | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect(port, host);
    let buffer = Buffer.alloc(0);
    const done = (pid: number | undefined): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(pid);
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    socket.once('connect', () => socket.write('*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n'));
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      const headerEnd = buffer.indexOf('\r\n');
      if (headerEnd < 0) return;
      const header = buffer.subarray(0, headerEnd).toString('latin1');
      if (!header.startsWith('$')) return done(undefined); // e.g. -LOADING or -ERR
      const bodyLength = Number(header.slice(1));
      if (buffer.length < headerEnd + 2 + bodyLength) return; // wait for the whole bulk string
      const body = buffer.subarray(headerEnd + 2, headerEnd + 2 + bodyLength).toString('latin1');
      const match = /process_id:(\d+)/.exec(body);
      done(match ? Number(match[1]) : undefined);
    });
    socket.once('error', () => done(undefined));
    socket.once('close', () => done(undefined));
  });
}
