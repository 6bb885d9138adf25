/**
 * @module A dedicated `LISTEN` connection for other gateways' writes, reconnecting with backoff; while it is down,
 * notifications may be missed, so {@link PgListener.connected} is false and caches must not be trusted.
 */
import pg from "pg";

/** Options of {@link PgListener}. */
export interface PgListenerOptions {
  connectionString: string;
  applicationName: string;
  channels: readonly string[];
  /** A notification on one of `channels`. */
  onNotification(channel: string, payload: string): void;
  /** The connection is (re)established and listening: anything may have changed while it was down. */
  onConnected(): void;
  /** Reconnect backoff: first wait (ms); doubled up to 2 s. Default 50. */
  retryBaseMs?: number;
}

/** A self-healing `LISTEN` connection. */
export class PgListener {
  private client: pg.Client | null = null;
  private closed = false;
  private retryMs: number;
  private timer: NodeJS.Timeout | null = null;
  /** Whether the connection is up and listening right now. */
  connected = false;
  /** Settles when the first connection attempt has succeeded or failed. */
  readonly ready: Promise<void>;

  constructor(private readonly options: PgListenerOptions) {
    this.retryMs = options.retryBaseMs ?? 50;
    this.ready = this.connect();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({
      connectionString: this.options.connectionString,
      application_name: this.options.applicationName,
    });
    this.client = client;
    client.on("error", () => this.lost(client));
    client.on("end", () => this.lost(client));
    client.on("notification", (msg) => this.options.onNotification(msg.channel, msg.payload ?? ""));
    try {
      await client.connect();
      for (const channel of this.options.channels) await client.query(`LISTEN ${channel}`);
    } catch {
      this.lost(client);
      return;
    }
    if (this.client !== client || this.closed) return;
    this.connected = true;
    this.retryMs = this.options.retryBaseMs ?? 50;
    this.options.onConnected();
  }

  /** The connection failed or dropped: mark it down and schedule a reconnect (once per client). */
  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = null;
    this.connected = false;
    client.end().catch(() => undefined);
    if (this.closed) return;
    const wait = this.retryMs;
    this.retryMs = Math.min(2000, this.retryMs * 2);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.connect();
    }, wait);
  }

  /** Stops listening and reconnecting. */
  async close(): Promise<void> {
    this.closed = true;
    this.connected = false;
    if (this.timer) clearTimeout(this.timer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }
}
