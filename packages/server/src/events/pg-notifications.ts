// One PostgreSQL connection that LISTENs on the channels other processes
// NOTIFY: new job events (payload: job id) and deployment changes.
import pg from "pg";

export class PgNotifications {
  private constructor(private readonly client: pg.Client) {}

  static async listen(
    url: string,
    handlers: Record<string, (payload: string) => void>,
  ): Promise<PgNotifications> {
    const client = new pg.Client({ connectionString: url });
    client.on("notification", (message) => handlers[message.channel]?.(message.payload ?? ""));
    client.on("error", (error) => console.error("svc: LISTEN connection failed:", error.message));
    await client.connect();
    for (const channel of Object.keys(handlers)) await client.query(`LISTEN ${channel}`);
    return new PgNotifications(client);
  }

  async close(): Promise<void> {
    await this.client.end().catch(() => {});
  }
}
