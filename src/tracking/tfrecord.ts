/**
 * @module TFRecord framing, the container of TensorBoard event files: each record is its length (uint64 LE), the
 * masked CRC-32C of the length, the bytes, and the masked CRC-32C of the bytes.
 * @see https://www.tensorflow.org/tutorials/load_data/tfrecord#tfrecords_format_details
 */

/** CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) lookup table. */
const CRC32C_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/**
 * CRC-32C of bytes.
 * @param bytes - the data
 * @returns the checksum, an unsigned 32-bit integer (`crc32c("123456789") = 0xE3069283`)
 */
export function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = CRC32C_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** TFRecord's masked CRC: rotate right by 15 bits and add 0xa282ead8 (mod 2^32). */
export function maskedCrc32c(bytes: Uint8Array): number {
  const crc = crc32c(bytes);
  return (((crc >>> 15) | (crc << 17)) + 0xa282ead8) >>> 0;
}

/**
 * Frames one record.
 * @param data - the record (a serialised `Event`)
 * @returns length, its masked CRC, the data and its masked CRC, [12 + data.length + 4] bytes
 */
export function tfRecord(data: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + data.length + 4);
  out.writeBigUInt64LE(BigInt(data.length), 0);
  out.writeUInt32LE(maskedCrc32c(out.subarray(0, 8)), 8);
  out.set(data, 12);
  out.writeUInt32LE(maskedCrc32c(data), 12 + data.length);
  return out;
}
