// One run as the UI knows it: every stream part in, a plain data model out (no DOM here, so it is tested in
// node). Parts come from the LangGraph JS SDK streaming ["messages", "updates", "custom"] with subgraphs:
// `custom` carries the protocol events, `messages/*` the agents' own words (the "thinking" narration),
// `updates` the plan and the state keys the run writes.

import { HALT_REASONS, PROTOCOL_VERSION, isKnown, splitEventName } from "./protocol";
import type { AnyEvent, EndStatus, EventOf, Status, StatusOf, UnknownEvent } from "./protocol";
import { statusNote } from "./format";
import type { Note } from "./format";

export type { Status } from "./protocol";
export type Finding = NonNullable<EventOf<"subagent_findings">["findings"]>[number];

export interface StreamPart {
  event: string;
  data: unknown;
  id?: unknown;
}

// --- the thread state keys the UI reads (README "The final thread state") --------------------------

export interface Citation {
  index: number;
  url?: string | null;
  title?: string;
  evidence_id?: string | null;
  verified?: boolean;
  reason?: string;
  detail?: string;
  [field: string]: unknown;
}

export interface SourceEntry {
  index: number;
  url: string;
  domain?: string;
  title?: string;
}

export interface EvidenceEntry {
  id: string;
  url: string;
  title?: string;
  kind?: string;
  agent?: string;
  chars?: number;
  text?: string;
}

export interface HandOver {
  unit?: string;
  summary?: string;
  findings?: Finding[];
  gaps?: string[];
  halted?: string | null;
}

export interface Todo {
  content: string;
  status: string;
}

export interface Message {
  type?: string;
  content?: unknown;
  name?: string | null;
  id?: string | null;
  tool_calls?: { name?: string; id?: string; args?: Record<string, unknown> }[];
  tool_call_chunks?: { name?: string; id?: string; args?: Record<string, unknown> }[];
  usage_metadata?: unknown;
  additional_kwargs?: Record<string, unknown>;
}

export interface ThreadValues {
  messages?: Message[];
  final_report?: string | null;
  draft_report?: string | null;
  sources?: SourceEntry[];
  evidence?: EvidenceEntry[];
  /** One entry per checked claim (markdown.ts ClaimEntry). */
  citations?: unknown[];
  /** The claims' counts and coverage sentence, as on the report event (domain/claims.py summarise_claims). */
  claim_summary?: EventOf<"report">["claims"];
  /** One entry per cited source: whether its quotes were found in what the run retrieved. */
  cited_sources?: Citation[];
  findings?: Record<string, HandOver>;
  todos?: Todo[];
  [key: string]: unknown;
}

// --- harness messages (conversation.py): never shown as anyone's words ------------------------------

export const HARNESS_NAME = "dra_harness";
export const HIDDEN_ID_PREFIX = "do-not-render-";
export const DELIVERABLE_NAME = "dra_deliverable";

export function isHarnessMessage(message: Message): boolean {
  return (
    message.name === HARNESS_NAME ||
    (typeof message.id === "string" && message.id.startsWith(HIDDEN_ID_PREFIX)) ||
    message.additional_kwargs?.dra_harness === true
  );
}

export function messageText(message: Message): string {
  const content = message.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === "string" ? part : typeof part?.text === "string" ? part.text : ""))
      .join("");
  }
  return "";
}

/** What a research unit keeps as its final answer once its findings are staged (`handover/progress.py`). */
const HAND_OVER_LINE = "Handing over: ";

/** A sub-agent's hand-back (its JSON, or the hand-over line kept in its place) is its findings table, not narration. */
function isHandBack(text: string): boolean {
  const trimmed = text.trim();
  if (trimmed.startsWith(HAND_OVER_LINE)) return true;
  if (!trimmed.startsWith("{")) return false;
  try {
    const parsed = JSON.parse(trimmed);
    return typeof parsed === "object" && parsed !== null && ("findings" in parsed || "summary" in parsed);
  } catch {
    return false;
  }
}

// --- the feed ------------------------------------------------------------------------------------------

export type FeedItem =
  | { kind: "search"; key: string; rev: number; query?: EventOf<"search_query">; results?: EventOf<"search_results"> }
  | { kind: "page"; key: string; rev: number; event: EventOf<"page_fetched"> }
  | {
      kind: "call";
      key: string;
      rev: number;
      via: "tool" | "mcp";
      call?: EventOf<"tool_call"> | EventOf<"mcp_call">;
      result?: EventOf<"tool_result"> | EventOf<"mcp_result">;
    }
  | { kind: "skill"; key: string; rev: number; event: EventOf<"skill"> }
  | { kind: "script"; key: string; rev: number; event: EventOf<"script"> }
  | { kind: "task_diff"; key: string; rev: number; event: EventOf<"task_diff"> }
  | { kind: "note"; key: string; rev: number; note: Note; event: Status }
  | { kind: "generic"; key: string; rev: number; event: UnknownEvent };

export type LaneState = "running" | "done" | "failed" | "halted";

export interface Thought {
  id: string;
  text: string;
}

export interface Lane {
  taskId: string;
  role: string;
  number: number;
  unit?: string;
  model?: string;
  state: LaneState;
  feed: FeedItem[];
  thoughts: Thought[];
  findings?: EventOf<"subagent_findings">;
  done?: StatusOf<"subagent_done">;
  failure?: string;
  rev: number;
}

export function laneLabel(lane: Lane): string {
  return `${lane.role} #${lane.number}`;
}

export interface Counters {
  modelCalls: number;
  searches: number;
  pages: number;
  toolCalls: number;
  tokens: number;
}

const SILENT_STATES = new Set(["model_call", "subagent_start", "subagent_done", "subagent_failed", "done", "error"]);

export class RunModel {
  runId?: string;
  threadId?: string;
  start?: EventOf<"run_start">;
  /** The server's protocol version when it differs from the one this UI was built for. */
  versionMismatch?: number;
  heartbeat?: { who: string; event: StatusOf<"model_call"> };
  orchestrator: { feed: FeedItem[]; thoughts: Thought[]; rev: number } = { feed: [], thoughts: [], rev: 0 };
  lanes = new Map<string, Lane>();
  todos: Todo[] = [];
  clarification?: string[];
  report?: EventOf<"report">;
  usage?: EventOf<"usage">;
  end?: EndStatus;
  /** The last words of the orchestrator in this run: the answer of a run that needed no research. */
  answer?: string;
  /** The thread's last AI message after its last user message, from the state: what every client shows. */
  finalMessage?: string;
  streamError?: string;
  stopMode?: string;
  /** The orchestrator's report was sent back for a revision that has not been delivered yet. */
  revising = false;
  compacting = false;
  triaged = false;
  values: ThreadValues = {};
  counters: Counters = { modelCalls: 0, searches: 0, pages: 0, toolCalls: 0, tokens: 0 };
  /** Custom events seen: 0 after a replay means the server kept no stream of this run. */
  eventCount = 0;
  lastEventId?: string;
  rev = 0;
  onChange?: () => void;

  private namespaces = new Map<string, string>();
  private messageNamespaces = new Map<string, string>();
  private partialText = new Map<string, string>();
  private toolCallIds = new Set<string>();
  private modelMessages = new Set<string>();
  private messageTokens = 0;
  private briefs = new Map<string, string>();
  private pendingThoughts = new Map<string, Map<string, string>>();
  private thoughtsByLane = new Map<string, Map<string, string>>();
  private items = new Map<string, FeedItem>();
  private nextKey = 0;

  /** What the run has spent so far, as far as its stream tells: exact once the usage event arrived. */
  spend(): { modelCalls: number; toolCalls: number; tokens: number; costUsd?: number } {
    if (this.usage) {
      return { modelCalls: this.usage.model_calls, toolCalls: this.usage.tool_calls, tokens: this.usage.total_tokens, costUsd: this.usage.cost_usd };
    }
    return {
      modelCalls: Math.max(this.counters.modelCalls, this.modelMessages.size),
      toolCalls: Math.max(this.counters.toolCalls, this.toolCallIds.size),
      tokens: Math.max(this.counters.tokens, this.messageTokens),
    };
  }

  get ended(): boolean {
    return this.end !== undefined;
  }

  get runningLanes(): Lane[] {
    return [...this.lanes.values()].filter((lane) => lane.state === "running");
  }

  /** Where the run is, in a few words. */
  phase(): string {
    if (this.end) return endPhase(this.end);
    if (this.streamError) return "Disconnected";
    if (this.clarification) return "Waiting for your answers";
    if (this.stopMode === "now") return "Stopping";
    if (this.stopMode === "wrap_up") return "Wrapping up";
    if (this.revising) return "Revising the report";
    if (this.compacting) return "Compacting context";
    const running = this.runningLanes.length;
    if (running > 0) return `Researching: ${running} sub-agent${running === 1 ? "" : "s"} at work`;
    if (this.lanes.size > 0) return "Writing the report";
    if (this.triaged) return "Planning";
    if (this.start) return "Reading the question";
    return "Starting";
  }

  /** One stream part from the SDK. */
  apply(part: StreamPart): void {
    if (typeof part.id === "string" && part.id) this.lastEventId = part.id;
    const { channel, namespace } = splitEventName(part.event);
    if (channel === "metadata" && isRecord(part.data) && typeof part.data.run_id === "string") {
      this.runId = part.data.run_id;
    } else if (channel === "custom" && isRecord(part.data) && typeof part.data.type === "string") {
      this.onEvent(part.data as AnyEvent, namespace);
    } else if (channel === "messages" && Array.isArray(part.data)) {
      const [message, metadata] = part.data as [unknown, unknown];
      if (isRecord(message)) this.onMessage(message as Message, namespace || this.namespaceOf(metadata), { delta: message.type === "AIMessageChunk" });
    } else if (channel === "messages/metadata" && isRecord(part.data)) {
      this.onMessageMetadata(part.data, namespace);
    } else if ((channel === "messages/partial" || channel === "messages/complete") && Array.isArray(part.data)) {
      for (const message of part.data) {
        if (!isRecord(message)) continue;
        const id = typeof message.id === "string" ? message.id : "";
        this.onMessage(message as Message, namespace || this.messageNamespaces.get(id) || "");
      }
    } else if (channel === "updates" && namespace === "" && isRecord(part.data)) {
      for (const update of Object.values(part.data)) if (isRecord(update)) this.onUpdate(update);
    } else if (channel === "error") {
      this.fail(errorDetail(part.data));
    }
    this.changed();
  }

  /** The thread state after the run (or instead of its events, when the server kept none). */
  applyValues(values: ThreadValues): void {
    this.values = { ...this.values, ...values };
    if (Array.isArray(values.todos)) this.todos = values.todos;
    if (Array.isArray(values.messages)) this.finalMessage = lastAnswer(values.messages) ?? this.finalMessage;
    this.changed();
  }

  /** Lanes for the hand-overs a thread state keeps (`findings` by task call id), when the run's events are gone. */
  lanesFromState(findings: Record<string, HandOver> | undefined): void {
    for (const [taskId, handOver] of Object.entries(findings ?? {})) {
      const lane = this.lane(taskId, "research-subagent");
      if (!lane || lane.findings) continue;
      lane.unit = lane.unit ?? handOver.unit;
      lane.findings = {
        type: "subagent_findings",
        task_id: taskId,
        unit: handOver.unit ?? "",
        summary: handOver.summary ?? "",
        findings: handOver.findings ?? [],
        gaps: handOver.gaps ?? [],
        halted: (handOver.halted ?? null) as EventOf<"subagent_findings">["halted"],
      };
      lane.state = handOver.halted ? "halted" : "done";
      lane.rev += 1;
    }
    this.changed();
  }

  fail(detail: string): void {
    this.streamError = detail;
    this.changed();
  }

  clearFailure(): void {
    this.streamError = undefined;
    this.changed();
  }

  changed(): void {
    this.rev += 1;
    this.onChange?.();
  }

  // --- custom events -----------------------------------------------------------------------------

  private onEvent(event: AnyEvent, namespace: string): void {
    this.eventCount += 1;
    if (namespace && event.task_id) this.learnNamespace(namespace, event.task_id);
    if (!isKnown(event)) {
      this.push(event.task_id, event.role, { kind: "generic", key: this.key(), rev: 0, event: event as UnknownEvent });
      return;
    }
    switch (event.type) {
      case "run_start":
        this.start = event;
        this.runId = event.run_id ?? this.runId;
        this.threadId = event.thread_id ?? this.threadId;
        if (event.protocol_version !== undefined && event.protocol_version !== PROTOCOL_VERSION) {
          this.versionMismatch = event.protocol_version;
        }
        return;
      case "status":
        return this.onStatus(event);
      case "search_query":
        this.counters.searches += 1;
        this.counters.toolCalls += 1;
        this.item(event, `search:${event.id}`, () => ({ kind: "search", key: "", rev: 0 }), (item) => {
          if (item.kind === "search") item.query = event;
        });
        return;
      case "search_results":
        this.item(event, `search:${event.id}`, () => ({ kind: "search", key: "", rev: 0 }), (item) => {
          if (item.kind === "search") item.results = event;
        });
        return;
      case "page_fetched":
        this.counters.pages += 1;
        this.counters.toolCalls += 1;
        this.push(event.task_id, event.role, { kind: "page", key: this.key(), rev: 0, event });
        return;
      case "tool_call":
      case "mcp_call":
        this.counters.toolCalls += 1;
        this.item(event, `call:${event.id}`, () => ({ kind: "call", key: "", rev: 0, via: event.type === "mcp_call" ? "mcp" : "tool" }), (item) => {
          if (item.kind === "call") item.call = event;
        });
        return;
      case "tool_result":
      case "mcp_result":
        this.item(event, `call:${event.id}`, () => ({ kind: "call", key: "", rev: 0, via: event.type === "mcp_result" ? "mcp" : "tool" }), (item) => {
          if (item.kind === "call") item.result = event;
        });
        return;
      case "task_diff":
        this.push(event.task_id, event.role, { kind: "task_diff", key: this.key(), rev: 0, event });
        return;
      case "skill":
        this.push(event.task_id, event.role, { kind: "skill", key: this.key(), rev: 0, event });
        return;
      case "script":
        this.push(event.task_id, event.role, { kind: "script", key: this.key(), rev: 0, event });
        return;
      case "source":
        return;
      case "subagent_findings": {
        const lane = this.lane(event.task_id, event.role);
        if (lane) {
          lane.findings = event;
          lane.unit = lane.unit ?? event.unit;
          if (event.halted) lane.state = "halted";
          lane.rev += 1;
        }
        return;
      }
      case "clarification":
        this.clarification = event.questions;
        return;
      case "report":
        this.report = event;
        this.revising = false;
        return;
      case "usage":
        this.usage = event;
        return;
    }
  }

  private onStatus(event: Status): void {
    const taskId = event.task_id ?? undefined;
    const fromOrchestrator = !taskId || event.role === "orchestrator";
    switch (event.state) {
      case "triage":
        this.triaged = true;
        return;
      case "revising":
        if (fromOrchestrator) this.revising = true;
        break;
      case "compacting":
        if (fromOrchestrator) this.compacting = true;
        break;
      case "compacted":
        if (fromOrchestrator) this.compacting = false;
        break;
      case "model_call": {
        this.counters.modelCalls += 1;
        const lane = taskId ? this.lane(taskId, event.role) : undefined;
        if (lane && event.unit && !lane.unit) {
          lane.unit = event.unit;
          lane.rev += 1;
        }
        this.heartbeat = { who: lane ? laneLabel(lane) : "The orchestrator", event };
        return;
      }
      case "subagent_start": {
        const lane = this.lane(taskId, event.subagent ?? event.role);
        if (lane) {
          lane.model = event.model ?? lane.model;
          lane.state = "running";
          lane.rev += 1;
        }
        return;
      }
      case "subagent_done": {
        const lane = this.lane(taskId, event.subagent ?? event.role);
        if (lane) {
          lane.done = event;
          lane.model = event.model ?? lane.model;
          lane.state = lane.findings?.halted ? "halted" : "done";
          lane.rev += 1;
        }
        if (typeof event.total_tokens === "number") this.counters.tokens += event.total_tokens;
        return;
      }
      case "subagent_failed": {
        const lane = this.lane(taskId, event.subagent ?? event.role);
        if (lane) {
          lane.state = "failed";
          lane.failure = event.detail ?? "The sub-agent failed.";
          lane.rev += 1;
        }
        return;
      }
      case "done":
      case "error":
        this.end = event;
        this.heartbeat = undefined;
        for (const lane of this.lanes.values()) {
          if (lane.state === "running") {
            lane.state = "halted";
            lane.rev += 1;
          }
        }
        return;
      case "stop_requested":
        this.stopMode = event.reason ?? "now";
        break;
    }
    if (SILENT_STATES.has(event.state)) return;
    this.push(taskId, event.role, { kind: "note", key: this.key(), rev: 0, note: statusNote(event), event });
  }

  // --- lanes and feeds ---------------------------------------------------------------------------

  private lane(taskId: string | null | undefined, role: string | null | undefined): Lane | undefined {
    if (!taskId) return undefined;
    let lane = this.lanes.get(taskId);
    if (lane && lane.role === "sub-agent" && role && role !== "orchestrator") lane.role = role;
    if (!lane) {
      lane = {
        taskId,
        role: role && role !== "orchestrator" ? role : "sub-agent",
        number: this.lanes.size + 1,
        unit: this.briefs.get(taskId),
        state: "running",
        feed: [],
        thoughts: [],
        rev: 0,
      };
      this.lanes.set(taskId, lane);
      const waiting = this.thoughtsByLane.get(taskId);
      if (waiting) lane.thoughts = [...waiting].map(([id, text]) => ({ id, text }));
    }
    return lane;
  }

  private feedOf(taskId: string | null | undefined, role: string | undefined): { feed: FeedItem[]; rev: number } {
    const lane = taskId ? this.lane(taskId, role) : undefined;
    return lane ?? this.orchestrator;
  }

  private key(): string {
    this.nextKey += 1;
    return `i${this.nextKey}`;
  }

  private push(taskId: string | null | undefined, role: string | undefined, item: FeedItem): void {
    const owner = this.feedOf(taskId, role);
    owner.feed.push(item);
    owner.rev += 1;
  }

  /** The feed item with this identity (a search and its results, a call and its result), made on first sight. */
  private item(event: AnyEvent, identity: string, make: () => FeedItem, update: (item: FeedItem) => void): void {
    let item = this.items.get(identity);
    if (!item) {
      item = make();
      item.key = this.key();
      this.items.set(identity, item);
      this.push(event.task_id, event.role, item);
    }
    update(item);
    item.rev += 1;
    this.feedOf(event.task_id, event.role).rev += 1;
  }

  private learnNamespace(namespace: string, taskId: string): void {
    if (this.namespaces.has(namespace)) return;
    this.namespaces.set(namespace, taskId);
    const waiting = this.pendingThoughts.get(namespace);
    if (!waiting) return;
    this.pendingThoughts.delete(namespace);
    for (const [id, text] of waiting) this.think(taskId, id, text);
  }

  // --- messages and updates ----------------------------------------------------------------------

  /**
   * langgraph-api names no sub-graph on `messages/*` parts; their metadata's `checkpoint_ns` is the namespace
   * the same agent's custom events arrive on (`tools:<uuid>`), and the orchestrator's messages have none.
   */
  private onMessageMetadata(data: Record<string, unknown>, namespace: string): void {
    for (const [id, entry] of Object.entries(data)) {
      this.messageNamespaces.set(id, namespace || this.namespaceOf(isRecord(entry) ? entry.metadata : undefined));
    }
  }

  private namespaceOf(metadata: unknown): string {
    if (!isRecord(metadata) || metadata.lc_agent_name === "orchestrator") return "";
    const checkpoint = typeof metadata.checkpoint_ns === "string" ? metadata.checkpoint_ns : "";
    return checkpoint.split("|")[0] ?? "";
  }

  private onMessage(message: Message, namespace: string, { delta = false } = {}): void {
    const kind = message.type;
    if (kind !== "ai" && kind !== "AIMessageChunk") return;
    for (const call of [...(message.tool_calls ?? []), ...(message.tool_call_chunks ?? [])]) {
      if (call.id) this.toolCallIds.add(call.id);
      const description = call.args?.description;
      if (namespace === "" && call.name === "task" && call.id && typeof description === "string") this.learnBrief(call.id, description);
    }
    const usage = message.usage_metadata;
    if (isRecord(usage) && typeof usage.total_tokens === "number") this.messageTokens += usage.total_tokens;
    if (message.id) this.modelMessages.add(message.id);
    if (isHarnessMessage(message)) return;
    let text = messageText(message);
    if (delta && message.id) {
      text = (this.partialText.get(message.id) ?? "") + text;
      this.partialText.set(message.id, text);
    }
    if (!text.trim()) return;
    if (namespace === "") {
      this.answer = text;
      if (message.name === DELIVERABLE_NAME) return;
    }
    if (isHandBack(text)) return;
    const id = message.id ?? `m${this.nextKey++}`;
    if (namespace === "") return this.think("", id, text);
    const taskId = this.namespaces.get(namespace);
    if (taskId) return this.think(taskId, id, text);
    const waiting = this.pendingThoughts.get(namespace) ?? new Map<string, string>();
    waiting.set(id, text);
    this.pendingThoughts.set(namespace, waiting);
  }

  private learnBrief(taskId: string, description: string): void {
    this.briefs.set(taskId, description);
    const lane = this.lanes.get(taskId);
    if (lane && !lane.unit) {
      lane.unit = description;
      lane.rev += 1;
    }
  }

  private think(taskId: string, id: string, text: string): void {
    const owner = taskId ? this.lanes.get(taskId) : this.orchestrator;
    const byId = this.thoughtsByLane.get(taskId) ?? new Map<string, string>();
    byId.set(id, text);
    this.thoughtsByLane.set(taskId, byId);
    if (!owner) return; // the lane appears with its first event and takes these along
    owner.thoughts = [...byId].map(([messageId, words]) => ({ id: messageId, text: words }));
    owner.rev += 1;
  }

  private onUpdate(update: Record<string, unknown>): void {
    if (Array.isArray(update.todos)) this.todos = update.todos as Todo[];
    const keys = ["final_report", "sources", "evidence", "citations", "claim_summary", "cited_sources", "findings"] as const;
    for (const key of keys) if (key in update) this.values = { ...this.values, [key]: update[key] };
  }
}

/** The text of the last AI message after the last real user message, harness messages left out. */
export function lastAnswer(messages: Message[]): string | undefined {
  let answer: string | undefined;
  for (const message of messages) {
    if (isHarnessMessage(message)) continue;
    if (message.type === "human") answer = undefined;
    else if (message.type === "ai" && messageText(message).trim()) answer = messageText(message);
  }
  return answer;
}

function endPhase(end: EndStatus): string {
  if (end.reason === "awaiting_clarification") return "Waiting for your answers";
  if (HALT_REASONS.has(end.reason)) return "Stopped early";
  return end.state === "done" ? "Finished" : "Ended with an error";
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The detail of an `error` stream part: `{error, message}` from langgraph-api. */
export function errorDetail(data: unknown): string {
  if (typeof data === "string") return data;
  if (isRecord(data)) {
    const message = data.message ?? data.detail;
    const name = data.error;
    if (typeof message === "string" && typeof name === "string" && name && !message.startsWith(name)) return `${name}: ${message}`;
    if (typeof message === "string") return message;
    if (typeof name === "string") return name;
  }
  return JSON.stringify(data);
}
