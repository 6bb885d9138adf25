import { describe, expect, it } from "vitest";
import { LogTail } from "./log-tail.js";

describe("LogTail", () => {
  it("keeps only the newest bytes across chunk boundaries and counts what it dropped", () => {
    const tail = new LogTail(5);
    tail.push(Buffer.from("abc"));
    tail.push(Buffer.from("defg"));
    expect(tail.text()).toBe("cdefg");
    expect(tail.droppedBytes).toBe(2);
    tail.push(Buffer.from("123456"));
    expect(tail.text()).toBe("23456");
    expect(tail.droppedBytes).toBe(8);
  });

  it("keeps nothing with a zero limit", () => {
    const tail = new LogTail(0);
    tail.push(Buffer.from("abc"));
    expect(tail.text()).toBe("");
    expect(tail.droppedBytes).toBe(3);
  });
});
