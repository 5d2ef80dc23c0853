/**
 * Redis Cluster key slots: CRC16 (XMODEM) of the key's hash tag, modulo 16384, and — for each slot — a short
 * string that hashes to it, so the library's guard markers can sit in the same slot as the lock they guard.
 */
const SLOTS = 16_384;

/** Whether `client` is an ioredis `Cluster` (duck-typed: a client from another copy of ioredis counts too). */
export function isClusterClient(client: object): boolean {
  return (client as { isCluster?: boolean }).isCluster === true;
}

const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff];
  return crc;
}

/** The slot of `key` as Redis Cluster computes it: the hash tag `{...}` when it has a non-empty one. */
export function slotOf(key: string): number {
  const open = key.indexOf('{');
  if (open !== -1) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  return crc16(Buffer.from(key, 'utf8')) % SLOTS;
}

let tags: string[] | undefined;

/** A short tag (base 36 digits) whose slot is `slot`; the table of all 16,384 is built once (~160k hashes). */
export function tagForSlot(slot: number): string {
  if (!tags) {
    const table: string[] = new Array(SLOTS);
    let missing = SLOTS;
    for (let n = 0; missing > 0; n++) {
      const tag = n.toString(36);
      const at = crc16(Buffer.from(tag, 'latin1')) % SLOTS;
      if (table[at] === undefined) {
        table[at] = tag;
        missing--;
      }
    }
    tags = table;
  }
  return tags[slot];
}
