/**
 * @module W&B's transaction log framing (the `.wandb` file of a run): a 7-byte file header (`:W&B`, magic 0xBEE1 as
 * uint16 LE, version 0), then LevelDB log records in 32 KiB blocks counted from the start of the file. Each chunk is
 * a 7-byte header (CRC-32 IEEE of the type byte and the data, uint32 LE, unmasked; length uint16 LE; type: 1 full,
 * 2 first, 3 middle, 4 last) and its data; a block's last < 7 bytes are zero padding.
 * @see https://github.com/google/leveldb/blob/main/doc/log_format.md
 * @see https://github.com/wandb/wandb (core/pkg/leveldb/record.go, core/internal/transactionlog: CRCAlgoIEEE, version 0)
 */

const BLOCK_BYTES = 32 * 1024;
const CHUNK_HEADER_BYTES = 7;
const FULL = 1;
const FIRST = 2;
const MIDDLE = 3;
const LAST = 4;

/** The file header: ident `:W&B`, magic 0xBEE1 (uint16 LE), store version 0. */
export const WANDB_LOG_HEADER = Buffer.from([0x3a, 0x57, 0x26, 0x42, 0xe1, 0xbe, 0x00]);

/** CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320) lookup table. */
const CRC32_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/**
 * CRC-32 (IEEE, as zlib's `crc32`) of bytes.
 * @param bytes - the data
 * @returns the checksum, an unsigned 32-bit integer (`crc32("123456789") = 0xCBF43926`)
 */
export function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = (CRC32_TABLE[(crc ^ byte) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** One chunk: header (CRC of type byte + data, length, type) and data. */
function chunk(type: number, data: Uint8Array): Buffer {
  const out = Buffer.alloc(CHUNK_HEADER_BYTES + data.length);
  out[6] = type;
  out.set(data, CHUNK_HEADER_BYTES);
  out.writeUInt32LE(crc32(out.subarray(6)), 0);
  out.writeUInt16LE(data.length, 4);
  return out;
}

/**
 * Frames one record at file offset `offset`: padding to the next block when fewer than 7 bytes are left, then one
 * full chunk, or a first chunk, middle chunks and a last chunk when the record crosses blocks.
 * @param record - the serialised record (a `wandb_internal.Record`)
 * @param offset - the file's length before this record (≥ 7: the file header comes first)
 * @returns the bytes to append
 */
export function frameRecord(record: Uint8Array, offset: number): Buffer {
  const parts: Buffer[] = [];
  let at = offset;
  let rest = record;
  let first = true;
  for (;;) {
    const left = BLOCK_BYTES - (at % BLOCK_BYTES);
    if (left < CHUNK_HEADER_BYTES) {
      parts.push(Buffer.alloc(left));
      at += left;
      continue;
    }
    const room = left - CHUNK_HEADER_BYTES;
    const fits = rest.length <= room;
    const type = fits ? (first ? FULL : LAST) : first ? FIRST : MIDDLE;
    const piece = chunk(type, rest.subarray(0, Math.min(room, rest.length)));
    parts.push(piece);
    at += piece.length;
    if (fits) return Buffer.concat(parts);
    rest = rest.subarray(room);
    first = false;
  }
}
