// One PostgreSQL connection that LISTENs on the channels other processes
// NOTIFY: new job events (payload: job id) and deployment changes. When the
// connection drops it reconnects, then calls `onReconnect` so listeners can
// catch up on what was notified while it was down.
import pg from "pg";

const RETRY_MS = 1000;

export class PgNotifications {
  private client: pg.Client | null = null;
  private closed = false;

  private constructor(
    private readonly url: string,
    private readonly handlers: Record<string, (payload: string) => void>,
    private readonly onReconnect: () => void,
  ) {}

  static async listen(
    url: string,
    handlers: Record<string, (payload: string) => void>,
    onReconnect: () => void = () => {},
  ): Promise<PgNotifications> {
    const notifications = new PgNotifications(url, handlers, onReconnect);
    await notifications.connect();
    return notifications;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    client.on("notification", (message) => this.handlers[message.channel]?.(message.payload ?? ""));
    const lost = () => {
      if (this.closed || this.client !== client) return;
      this.client = null;
      console.error("svc: LISTEN connection to PostgreSQL lost; reconnecting");
      void client.end().catch(() => {});
      void this.retry();
    };
    client.on("error", lost);
    client.on("end", lost);
    await client.connect();
    for (const channel of Object.keys(this.handlers)) await client.query(`LISTEN ${channel}`);
    this.client = client;
  }

  private async retry(): Promise<void> {
    while (!this.closed) {
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      try {
        await this.connect();
        this.onReconnect();
        return;
      } catch (error) {
        console.error("svc: reconnecting LISTEN failed:", (error as Error).message);
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.client?.end().catch(() => {});
    this.client = null;
  }
}
