/**
 * @module Float32 safetensors without an npm dependency: an 8-byte LE header length, a JSON header (space-padded to
 * 8-byte alignment) of dtype, shape and data offsets plus `__metadata__`, then raw LE row-major data.
 * @see https://github.com/huggingface/safetensors#format
 */

/** One tensor of a safetensors file. */
export interface SafeTensor {
  shape: number[];
  data: Float32Array;
}

/** Contents of a safetensors file. */
export interface SafeTensorsFile {
  tensors: Map<string, SafeTensor>;
  metadata: Record<string, string>;
}

/** A file that is not valid safetensors (or uses a dtype this reader does not support). */
export class SafeTensorsFormatError extends Error {
  constructor(message: string) {
    super(`invalid safetensors: ${message}`);
    this.name = "SafeTensorsFormatError";
  }
}

const METADATA_KEY = "__metadata__";

/** Serialises tensors in order. @throws {RangeError} when a tensor's data does not match its shape */
export function encodeSafeTensors(tensors: Map<string, SafeTensor>, metadata: Record<string, string> = {}): Buffer {
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) header[METADATA_KEY] = metadata;
  let offset = 0;
  for (const [name, { shape, data }] of tensors) {
    if (data.length !== shape.reduce((a, b) => a * b, 1))
      throw new RangeError(`tensor ${name}: ${data.length} values do not fit shape [${shape}]`);
    header[name] = { dtype: "F32", shape, data_offsets: [offset, offset + data.byteLength] };
    offset += data.byteLength;
  }
  let json: Buffer = Buffer.from(JSON.stringify(header), "utf8");
  const padding = (8 - ((8 + json.length) % 8)) % 8;
  if (padding > 0) json = Buffer.concat([json, Buffer.alloc(padding, 0x20)]);
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(json.length));
  const chunks = [prefix, json];
  for (const { data } of tensors.values()) chunks.push(float32ToBytes(data));
  return Buffer.concat(chunks);
}

/** Parses a whole file. @throws {SafeTensorsFormatError} for truncation, bad JSON, a non-F32 dtype or bad offsets */
export function decodeSafeTensors(bytes: Buffer): SafeTensorsFile {
  if (bytes.length < 8) throw new SafeTensorsFormatError("file shorter than the 8-byte header length");
  const headerLength = Number(bytes.readBigUInt64LE(0));
  if (8 + headerLength > bytes.length)
    throw new SafeTensorsFormatError(`header length ${headerLength} exceeds the file`);
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString("utf8")) as Record<string, unknown>;
  } catch (error) {
    throw new SafeTensorsFormatError(`header is not JSON (${(error as Error).message})`);
  }
  const dataStart = 8 + headerLength;
  const dataLength = bytes.length - dataStart;
  const tensors = new Map<string, SafeTensor>();
  let metadata: Record<string, string> = {};
  for (const [name, entry] of Object.entries(header)) {
    if (name === METADATA_KEY) {
      metadata = entry as Record<string, string>;
      continue;
    }
    const { dtype, shape, data_offsets: offsets } = entry as { dtype: unknown; shape: unknown; data_offsets: unknown };
    if (dtype !== "F32") throw new SafeTensorsFormatError(`tensor ${name}: dtype ${String(dtype)} is not supported`);
    if (!isIntArray(shape) || !isIntArray(offsets) || offsets.length !== 2)
      throw new SafeTensorsFormatError(`tensor ${name}: shape and data_offsets must be integer arrays`);
    const [begin, end] = offsets as [number, number];
    if (begin > end || end > dataLength || end - begin !== 4 * shape.reduce((a, b) => a * b, 1))
      throw new SafeTensorsFormatError(`tensor ${name}: data_offsets [${begin}, ${end}] do not match shape [${shape}]`);
    tensors.set(name, { shape, data: bytesToFloat32(bytes.subarray(dataStart + begin, dataStart + end)) });
  }
  return { tensors, metadata };
}

function isIntArray(value: unknown): value is number[] {
  return Array.isArray(value) && value.every((x) => Number.isInteger(x) && x >= 0);
}

/** Little-endian bytes of float32 values (explicit, so the file is right on any host). */
function float32ToBytes(data: Float32Array): Buffer {
  const out = Buffer.alloc(data.byteLength);
  for (let i = 0; i < data.length; i++) out.writeFloatLE(data[i]!, 4 * i);
  return out;
}

function bytesToFloat32(bytes: Buffer): Float32Array {
  const out = new Float32Array(bytes.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readFloatLE(4 * i);
  return out;
}
