/**
 * @module The dashboard's calls to its gateway: same-origin JSON reads with the session cookie, the login, and the
 * live feed (`/api/dashboard/stream`, Server-Sent Events).
 */

/** Thrown when the gateway answers 401: the page shows the login form. */
export class LoggedOut extends Error {
  constructor() {
    super("Not logged in");
  }
}

/**
 * GETs a JSON document from the gateway.
 * @param path - absolute path with query, e.g. `/api/runs`
 * @throws {LoggedOut} on 401; Error with the gateway's `detail` on any other error status
 */
export async function getJson<T>(path: string): Promise<T> {
  return answerJson<T>(await fetch(path, { credentials: "same-origin", headers: { accept: "application/json" } }));
}

/**
 * POSTs a JSON query to the gateway, for reads whose query is too long for a URL.
 * @param path - absolute path, e.g. `/api/dashboard/detokenize`
 * @param body - the query, sent as JSON
 * @throws {LoggedOut} on 401; Error with the gateway's `detail` on any other error status
 */
export async function postJson<T>(path: string, body: unknown): Promise<T> {
  const headers = { accept: "application/json", "content-type": "application/json" };
  return answerJson<T>(
    await fetch(path, { method: "POST", credentials: "same-origin", headers, body: JSON.stringify(body) }),
  );
}

/** The JSON of a gateway answer. @throws {LoggedOut} on 401; Error with its `detail` on another error status */
async function answerJson<T>(res: Response): Promise<T> {
  if (res.status === 401) throw new LoggedOut();
  if (!res.ok) {
    const body = (await res.json().catch(() => ({}))) as { detail?: unknown };
    throw new Error(`${res.status} ${typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail)}`);
  }
  return (await res.json()) as T;
}

/**
 * Trades a key for a session cookie.
 * @returns true when the gateway accepted the key
 */
export async function login(key: string): Promise<boolean> {
  const res = await fetch("/ui/login", {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ key }),
  });
  return res.status === 204;
}

/** Ends the session. */
export async function logout(): Promise<void> {
  await fetch("/ui/logout", { method: "POST", credentials: "same-origin" });
}

/** Whether the browser holds a live session (or the gateway runs without a key). */
export async function sessionState(): Promise<{ open: boolean; authenticated: boolean }> {
  return getJson("/ui/session");
}

/**
 * Listeners of the live feed, by event name; each receives the event's parsed JSON data. `reopened` is called when
 * the feed is open again after a drop: events posted while it was down were never sent, so state should be fetched
 * again.
 */
export type StreamHandlers = Partial<Record<"run" | "steps" | "rollouts", (data: unknown) => void>> & {
  reopened?: () => void;
};

/**
 * Opens the live feed; the browser reconnects by itself after a drop (then `handlers.reopened` runs).
 * @returns a function that closes it
 */
export function openStream(handlers: StreamHandlers): () => void {
  const source = new EventSource("/api/dashboard/stream");
  const { reopened, ...events } = handlers;
  for (const [name, handler] of Object.entries(events)) {
    source.addEventListener(name, (event) => handler(JSON.parse((event as MessageEvent<string>).data)));
  }
  let opens = 0;
  source.addEventListener("open", () => {
    opens += 1;
    if (opens > 1) reopened?.();
  });
  return () => source.close();
}
