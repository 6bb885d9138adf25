import { describe, expect, it } from "vitest";
import { decodeSafeTensors, encodeSafeTensors, SafeTensorsFormatError } from "./safetensors.js";

const tensors = new Map([
  ["a.weight", { shape: [2, 3], data: Float32Array.from([1, -2, 3.5, 0, 1e-30, -7]) }],
  ["b", { shape: [1], data: Float32Array.from([Math.PI]) }],
]);

describe("safetensors", () => {
  it("round-trips tensors and metadata bit-exactly", () => {
    const file = decodeSafeTensors(encodeSafeTensors(tensors, { step: "3" }));
    expect([...file.tensors.keys()]).toEqual(["a.weight", "b"]);
    expect(file.tensors.get("a.weight")).toEqual(tensors.get("a.weight"));
    expect(file.tensors.get("b")!.data[0]).toBe(Math.fround(Math.PI));
    expect(file.metadata).toEqual({ step: "3" });
  });

  it("writes an 8-byte little-endian header length, a JSON header and 8-aligned raw float32 data", () => {
    const bytes = encodeSafeTensors(tensors);
    const headerLength = Number(bytes.readBigUInt64LE(0));
    expect((8 + headerLength) % 8).toBe(0);
    const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString("utf8"));
    expect(header["a.weight"]).toEqual({ dtype: "F32", shape: [2, 3], data_offsets: [0, 24] });
    expect(header.b).toEqual({ dtype: "F32", shape: [1], data_offsets: [24, 28] });
    expect(bytes.length).toBe(8 + headerLength + 28);
    expect(bytes.readFloatLE(8 + headerLength + 8)).toBe(3.5);
  });

  it("rejects a truncated file, a header past the end, a foreign dtype and offsets that do not fit the shape", () => {
    const good = encodeSafeTensors(tensors);
    expect(() => decodeSafeTensors(good.subarray(0, 4))).toThrow(SafeTensorsFormatError);
    expect(() => decodeSafeTensors(good.subarray(0, good.length - 4))).toThrow(/data_offsets/);
    const withHeader = (header: object): Buffer => {
      const json = Buffer.from(JSON.stringify(header));
      const prefix = Buffer.alloc(8);
      prefix.writeBigUInt64LE(BigInt(json.length));
      return Buffer.concat([prefix, json, Buffer.alloc(8)]);
    };
    expect(() => decodeSafeTensors(withHeader({ x: { dtype: "F16", shape: [2], data_offsets: [0, 4] } }))).toThrow(
      /dtype F16/,
    );
    expect(() => decodeSafeTensors(withHeader({ x: { dtype: "F32", shape: [3], data_offsets: [0, 8] } }))).toThrow(
      /do not match/,
    );
    const huge = Buffer.alloc(16);
    huge.writeBigUInt64LE(1000n);
    expect(() => decodeSafeTensors(huge)).toThrow(/exceeds the file/);
  });

  it("refuses to encode data that does not fit its shape", () => {
    expect(() => encodeSafeTensors(new Map([["x", { shape: [3], data: new Float32Array(2) }]]))).toThrow(RangeError);
  });
});
