import type { EventLogEntry } from "../lib/event-log.js";

export function EventLog({ entries }: { entries: EventLogEntry[] }) {
  return (
    <div className="event-log" data-testid="event-log">
      {entries.length === 0 ? (
        <div className="muted event-log-empty">No events yet</div>
      ) : (
        <table>
          <tbody>
            {entries.map((e) => (
              <tr key={e.key} className={`event-row event-${e.event.replace(".", "-")}`}>
                <td className="event-time">
                  {e.timestamp ? new Date(e.timestamp).toLocaleTimeString() : ""}
                </td>
                <td className="event-name">{e.event}</td>
                <td className="event-message">{e.message}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
