/** @module A raw HTTP/1.1 request sent on a socket whose client half-closes it, as `nc -N` does. */
import { connect } from "node:net";

/** POSTs `body`, ends the client's side, and returns the raw answer read until the server closes ("" if none). */
export function postHalfClosed(url: string, path: string, body: string, headers: string[] = []): Promise<string> {
  const head = [`POST ${path} HTTP/1.1`, "host: 127.0.0.1", ...headers, "content-type: application/json"];
  const request = `${head.join("\r\n")}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  return new Promise<string>((resolve, reject) => {
    const socket = connect(Number(new URL(url).port), "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    socket.on("error", reject);
    socket.end(request);
  });
}
