// The event protocol as the UI sees it: the generated types (from schema/events.schema.json) and what the
// UI needs around them. Anything the schema does not know (a newer event type, a newer field) is still an
// object with a `type`, and is rendered generically rather than dropped.

import type { DeepResearchAgentEvent, EventType } from "./generated/events";
import { EVENT_TYPES } from "./generated/events";

export * from "./generated/events";

export type EventOf<T extends EventType> = Extract<DeepResearchAgentEvent, { type: T }>;

/** A status event: one model per state (the schema's `Status` union). */
export type Status = EventOf<"status">;
export type StatusOf<S extends Status["state"]> = Extract<Status, { state: S }>;
/** The run's end: `done` or `error`, its `reason` an end reason. */
export type EndStatus = StatusOf<"done" | "error">;

/** Every key of any member of a union (`keyof` of a union names only the keys all members share). */
export type AnyKeyOf<T> = T extends unknown ? keyof T : never;

/** An event whose type this build of the UI does not know: shown as a generic row with every field. */
export interface UnknownEvent {
  type: string;
  role?: string;
  task_id?: string | null;
  [field: string]: unknown;
}

export type AnyEvent = DeepResearchAgentEvent | UnknownEvent;

const KNOWN = new Set<string>(EVENT_TYPES);

export function isKnown(event: AnyEvent): event is DeepResearchAgentEvent {
  return KNOWN.has(event.type);
}

/** The fields every event carries, never worth a row of their own. */
export const ENVELOPE_FIELDS = ["type", "role", "task_id"] as const;

/**
 * The fields of `event` that its renderer does not show, for a generic "more" list: a field the server
 * added after this UI was written still reaches the reader. `shown` is typed against the event, so a field
 * the schema renames or removes breaks the build.
 */
export function extraFields<E extends object>(event: E, shown: readonly AnyKeyOf<E>[]): [string, unknown][] {
  const skip = new Set<string>([...ENVELOPE_FIELDS, ...(shown as readonly PropertyKey[]).map(String)]);
  return Object.entries(event).filter(([key, value]) => !skip.has(key) && value !== null && value !== undefined);
}

/** `custom|tools:<uuid>` → `tools:<uuid>`; the orchestrator's parts have no namespace (""). */
export function splitEventName(name: string): { channel: string; namespace: string } {
  const bar = name.indexOf("|");
  return bar < 0 ? { channel: name, namespace: "" } : { channel: name.slice(0, bar), namespace: name.slice(bar + 1) };
}
