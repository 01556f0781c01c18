// The run model, fed stream parts shaped as langgraph-api sends them (see tests/js and the captured runs of
// tests/e2e): what a person would see is what the model holds.

import assert from "node:assert/strict";
import { test } from "node:test";

import { PROTOCOL_VERSION, extraFields } from "../src/protocol";
import { RunModel, laneLabel, lastAnswer } from "../src/model";
import type { StreamPart } from "../src/model";
import { endWords, outcomeWords, statusNote, taskDiffWords } from "../src/format";
import { answersOf, clarificationReply } from "../src/views/turn";

const TASK = "call_task_1";
const NS = "tools:7b3a3eba-028f-c5fc-4d59-a420c8fb3a09";

function custom(data: Record<string, unknown>, namespace = ""): StreamPart {
  return { event: namespace ? `custom|${namespace}` : "custom", data };
}

function subagent(data: Record<string, unknown>): StreamPart {
  return custom({ role: "research-subagent", task_id: TASK, ...data }, NS);
}

function happyPath(): StreamPart[] {
  return [
    { event: "metadata", data: { run_id: "run-1" } },
    custom({ role: "orchestrator", type: "run_start", protocol_version: PROTOCOL_VERSION, started_at: "2026-12-01T10:00:00Z", thread_id: "t-1", run_id: "run-1" }),
    custom({ role: "orchestrator", type: "status", state: "triage", reason: "classified", detail: "research" }),
    { event: "messages/metadata", data: { "ai-1": { metadata: { lc_agent_name: "orchestrator", langgraph_checkpoint_ns: "model:1" } } } },
    { event: "messages/complete", data: [{ type: "ai", id: "ai-1", content: "", tool_calls: [{ name: "task", id: TASK, args: { description: "Find the density" } }] }] },
    { event: "updates", data: { tools: { todos: [{ content: "Find the density", status: "in_progress" }] } } },
    custom({ role: "research-subagent", task_id: TASK, type: "status", state: "subagent_start", model: "m-sub", subagent: "research-subagent" }),
    subagent({ type: "status", state: "model_call", model: "m-sub", step: 1, unit: "Find the density" }),
    { event: "messages/metadata", data: { "ai-2": { metadata: { lc_agent_name: "research-subagent", checkpoint_ns: NS } } } },
    { event: "messages/complete", data: [{ type: "ai", id: "ai-2", content: "Looking for the figure first." }] },
    subagent({ type: "search_query", id: "s1", query: "sodium glass battery", source: "tavily" }),
    subagent({ type: "search_results", id: "s1", query: "sodium glass battery", ok: true, count: 1, results: [{ title: "The cell", url: "http://127.0.0.1:9/a", domain: "127.0.0.1", snippet: "412 Wh/kg" }] }),
    subagent({ type: "page_fetched", url: "http://127.0.0.1:9/a", ok: true, title: "The cell", chars: 1131 }),
    { event: "messages/metadata", data: { "ai-3": { metadata: { lc_agent_name: "research-subagent", checkpoint_ns: NS } } } },
    { event: "messages/complete", data: [{ type: "ai", id: "ai-3", content: '{"summary": "412", "findings": [], "gaps": []}' }] },
    custom({ role: "research-subagent", task_id: TASK, type: "subagent_findings", unit: "Find the density", summary: "They reach 412 Wh/kg.", findings: [{ finding: "They reach 412 Wh/kg.", evidence: "412 Wh/kg", source: "http://127.0.0.1:9/a" }], gaps: [] }),
    custom({ role: "research-subagent", task_id: TASK, type: "status", state: "subagent_done", model: "m-sub", subagent: "research-subagent", model_calls: 3, total_tokens: 4594, tool_calls: 2 }),
    custom({ role: "orchestrator", type: "report", markdown: "# R\n\nThey reach 412 Wh/kg [1].\n\n## Sources\n[1] The cell — http://127.0.0.1:9/a", partial: false }),
    { event: "updates", data: { "RunLifecycleMiddleware.after_agent": { cited_sources: [{ index: 1, url: "http://127.0.0.1:9/a", evidence_id: "ev2", verified: true, reason: "quote_verified" }] } } },
    custom({ role: "orchestrator", type: "usage", tool_calls: 5, model_calls: 6, input_tokens: 7863, output_tokens: 206, total_tokens: 8069, cost_usd: 0.0007, elapsed_s: 0.5, elapsed: "0m 0s", limits: { max_tool_calls: 200, recursion_limit: 4500 } }),
    custom({ role: "orchestrator", type: "status", state: "done", reason: "report_delivered", detail: "Report delivered. Run time 0m 0s.", elapsed_s: 0.5, elapsed: "0m 0s" }),
  ];
}

function feed(parts: StreamPart[]): RunModel {
  const model = new RunModel();
  for (const part of parts) model.apply(part);
  return model;
}

test("a unit's hand-over line is its findings table, not narration", () => {
  const parts = happyPath().map((part) =>
    part.event === "messages/complete" && JSON.stringify(part.data).includes("ai-3")
      ? { ...part, data: [{ type: "ai", id: "ai-3", content: "Handing over: They reach 412 Wh/kg. (1 finding)" }] }
      : part,
  );
  const [lane] = [...feed(parts).lanes.values()];
  assert.deepEqual(lane!.thoughts.map((t) => t.text), ["Looking for the figure first."]);
});

test("a happy path fills one finished lane with its search, page, findings and narration", () => {
  const model = feed(happyPath());

  assert.equal(model.runId, "run-1");
  assert.equal(model.versionMismatch, undefined);
  assert.deepEqual(model.todos, [{ content: "Find the density", status: "in_progress" }]);
  const lanes = [...model.lanes.values()];
  assert.equal(lanes.length, 1);
  const lane = lanes[0]!;
  assert.equal(laneLabel(lane), "research-subagent #1");
  assert.equal(lane.state, "done");
  assert.equal(lane.unit, "Find the density");
  assert.equal(lane.model, "m-sub");
  assert.deepEqual(lane.feed.map((item) => item.kind), ["search", "page"]);
  const search = lane.feed[0]!;
  assert.ok(search.kind === "search" && search.query?.query === "sodium glass battery" && search.results?.count === 1);
  assert.deepEqual(lane.thoughts.map((t) => t.text), ["Looking for the figure first."], "the hand-back JSON is the findings table, not narration");
  assert.equal(lane.findings?.findings?.length, 1);
  assert.deepEqual(model.orchestrator.thoughts, []);
  assert.equal(model.report?.partial, false);
  assert.equal(model.values.cited_sources?.[0]?.reason, "quote_verified");
  assert.equal(model.usage?.model_calls, 6);
  assert.equal(model.end?.reason, "report_delivered");
  assert.equal(model.phase(), "Finished");
  assert.deepEqual({ ...model.counters }, { modelCalls: 1, searches: 1, pages: 1, toolCalls: 2, tokens: 4594 });
});

test("narration that arrives before its sub-agent's first event lands in its lane", () => {
  const parts = happyPath();
  const early = parts.splice(8, 2);
  parts.splice(6, 0, ...early);
  const model = feed(parts);
  assert.deepEqual([...model.lanes.values()][0]!.thoughts.map((t) => t.text), ["Looking for the figure first."]);
});

test("the phase follows the run: planning, researching, writing, wrapping up", () => {
  const parts = happyPath();
  const model = new RunModel();
  const phases: string[] = [];
  for (const part of parts) {
    model.apply(part);
    phases.push(model.phase());
  }
  assert.ok(phases.includes("Planning"));
  assert.ok(phases.includes("Researching: 1 sub-agent at work"));
  assert.ok(phases.includes("Writing the report"));
  assert.equal(phases.at(-1), "Finished");
  const stopping = new RunModel();
  stopping.apply(custom({ role: "orchestrator", type: "status", state: "stop_requested", reason: "wrap_up", detail: "Wrapping up" }));
  assert.equal(stopping.phase(), "Wrapping up");
  assert.equal(stopping.orchestrator.feed[0]?.kind, "note");
});

test("harness messages never show as anyone's words", () => {
  const model = feed([
    { event: "messages/complete", data: [{ type: "ai", id: "do-not-render-1", content: "WRAP UP NOW: finish" }] },
    { event: "messages/complete", data: [{ type: "ai", id: "x2", name: "dra_harness", content: "The agent was stopped." }] },
    { event: "messages/complete", data: [{ type: "ai", id: "x3", additional_kwargs: { dra_harness: true }, content: "nudge" }] },
    { event: "messages/complete", data: [{ type: "human", id: "x4", content: "a question" }] },
    { event: "messages/complete", data: [{ type: "ai", id: "x5", content: "I will plan first." }] },
  ]);
  assert.deepEqual(model.orchestrator.thoughts.map((t) => t.text), ["I will plan first."]);
});

test("an event type this UI does not know is kept, with every field, in its sender's lane", () => {
  const model = feed([
    custom({ role: "research-subagent", task_id: TASK, type: "status", state: "subagent_start", subagent: "research-subagent" }),
    custom({ role: "research-subagent", task_id: TASK, type: "future_event", code: "print(1)", exit_code: 0 }, NS),
  ]);
  const item = [...model.lanes.values()][0]!.feed[0]!;
  assert.equal(item.kind, "generic");
  assert.ok(item.kind === "generic" && item.event.code === "print(1)" && item.event.exit_code === 0);
});

test("a script the coding sub-agent ran is a script row in its lane, with its final code", () => {
  const model = feed([
    custom({ role: "coding-subagent", task_id: TASK, type: "status", state: "subagent_start", subagent: "coding-subagent" }),
    custom({ role: "coding-subagent", task_id: TASK, type: "script", path: "/workspace/mean.py", code: "print(42)\n", language: "python", status: "ok", output: "42", bytes: 10, truncated: false }, NS),
  ]);
  const item = [...model.lanes.values()][0]!.feed[0]!;
  assert.ok(item.kind === "script" && item.event.code === "print(42)\n" && item.event.output === "42");
});

test("a status state this UI does not know is a note with its name and detail", () => {
  const model = feed([custom({ role: "orchestrator", type: "status", state: "sandbox_reset", detail: "the sandbox was reset", session: "s1" })]);
  const item = model.orchestrator.feed[0]!;
  assert.ok(item.kind === "note");
  assert.equal(item.note.text, "sandbox reset: the sandbox was reset");
  assert.deepEqual(extraFields(item.event, ["state", "detail"]), [["session", "s1"]]);
});

test("a newer protocol version is flagged, an older field set is not", () => {
  const model = feed([custom({ role: "orchestrator", type: "run_start", protocol_version: PROTOCOL_VERSION + 1, started_at: "2026-12-01T10:00:00Z" })]);
  assert.equal(model.versionMismatch, PROTOCOL_VERSION + 1);
});

test("a halted run marks its running lanes stopped, and a stream error part is the run's failure", () => {
  const model = feed([
    custom({ role: "research-subagent", task_id: TASK, type: "status", state: "subagent_start", subagent: "research-subagent" }),
    custom({ role: "orchestrator", type: "status", state: "budget_soft", reason: "tool_calls", used: 8, limit: 10 }),
    custom({ role: "orchestrator", type: "status", state: "error", reason: "budget_exhausted", detail: "Run time 0m 1s." }),
    { event: "error", data: { error: "RuntimeError", message: "boom" } },
  ]);
  assert.equal([...model.lanes.values()][0]!.state, "halted");
  const note = model.orchestrator.feed[0]!;
  assert.ok(note.kind === "note" && note.note.text === "Budget 80 % used (tool calls 8 of 10): wrapping up");
  assert.equal(model.streamError, "RuntimeError: boom");
  assert.equal(endWords(model.end!), "Stopped: the budget ran out; the report covers what was found so far");
  assert.equal(model.phase(), "Stopped early", "a halt reason, as the schema's HaltReason lists them");
});

test("an end status's outcome tells the reader what the answer is worth; a plain answer needs no notice", () => {
  const model = feed([custom({ role: "orchestrator", type: "status", state: "done", reason: "report_delivered", outcome: "partial_retrieval" })]);
  assert.equal(model.end?.outcome, "partial_retrieval");
  assert.match(outcomeWords(model.end?.outcome), /^Some sources could not be reached/);
  assert.equal(outcomeWords("answered"), "");
  assert.equal(outcomeWords(undefined), "");
  for (const outcome of ["partial", "insufficient_evidence", "budget_exhausted", "recording_failed"] as const) assert.ok(outcomeWords(outcome).length > 20, outcome);
});

test("a re-run task's changes show in the orchestrator's feed, counted in one line", () => {
  const model = feed([
    custom({
      role: "orchestrator", type: "task_diff", task: "kelp", previous_run_at: "2026-11-24T10:00:00Z",
      new_findings: ["The farm stored 1,310 tonnes."], new_sources: [], changed_sources: ["http://127.0.0.1/kelp"],
      moved_figures: [{ source: "http://127.0.0.1/kelp", before: "1,240 tonnes", after: "1,310 tonnes" }],
    }),
  ]);
  const [item] = model.orchestrator.feed;
  assert.ok(item?.kind === "task_diff");
  assert.equal(taskDiffWords(item.event), "What changed since the last run of “kelp”: 1 new finding; 1 source changed; 1,240 tonnes → 1,310 tonnes");
});

test("guard events read plainly", () => {
  const words = (fields: Record<string, unknown>) => statusNote({ type: "status", ...fields } as never).text;
  assert.equal(words({ state: "loop_detected", repeats: 3 }), "Loop detected: the same call 3 times; the agent was told to change course");
  assert.equal(words({ state: "revising", reason: "report_quality", detail: "cite [2]" }), "Revising report: cite [2]");
  assert.equal(words({ state: "rate_limited", wait_s: 2, attempt: 1 }), "Rate limited: waiting 2 s (attempt 1)");
  assert.equal(words({ state: "budget_halt", reason: "cost", used: 0.5, limit: 0.5 }), "Budget used up (cost $0.50 of $0.50): stopping");
  assert.equal(words({ state: "steer_received", message: "drop Scotland", dropped_units: ["t1"] }), "You steered the run: \u201cdrop Scotland\u201d; stopping 1 running unit, each handing over what it found");
  assert.equal(words({ state: "steer_received", message: "also cover Wales", dropped_units: [] }), "You steered the run: \u201calso cover Wales\u201d");
});

test("the clarification reply is the one ./run.sh ask sends", () => {
  assert.equal(
    clarificationReply(["Which region should I cover?", "Which  timeframe?"], ["Nordic   countries", " "]),
    "Answers to your clarifying questions:\n1. Q: Which region should I cover? A: Nordic countries\n2. Q: Which timeframe? A: (no answer; use your assumption)",
  );
});

test("messages-tuple parts: chunks add up per message, land in their sub-agent's lane, and count as spend", () => {
  const meta = { lc_agent_name: "research-subagent", checkpoint_ns: NS };
  const model = feed([
    custom({ role: "research-subagent", task_id: TASK, type: "status", state: "subagent_start", subagent: "research-subagent" }),
    { event: `messages|${NS}`, data: [{ type: "AIMessageChunk", id: "c1", content: "Looking " }, meta] },
    subagent({ type: "status", state: "model_call", step: 1, unit: "A brief" }),
    { event: `messages|${NS}`, data: [{ type: "AIMessageChunk", id: "c1", content: "further." }, meta] },
    { event: `messages|${NS}`, data: [{ type: "AIMessageChunk", id: "c1", content: "", tool_call_chunks: [{ id: "call_a", name: "web_search" }], usage_metadata: { total_tokens: 120 } }, meta] },
    { event: "messages", data: [{ type: "ai", id: "o1", content: "", tool_calls: [{ id: "call_b", name: "task", args: { description: "A brief" } }], usage_metadata: { total_tokens: 80 } }, { lc_agent_name: "orchestrator" }] },
  ]);
  assert.deepEqual([...model.lanes.values()][0]!.thoughts.map((t) => t.text), ["Looking further."]);
  assert.deepEqual(model.spend(), { modelCalls: 2, toolCalls: 2, tokens: 200 }, "two messages, two tool calls, their tokens");
});

test("tool and MCP calls pair with their results, skills show once each, in their sub-agent's lane", () => {
  const model = feed([
    custom({ role: "research-subagent", task_id: TASK, type: "status", state: "subagent_start", subagent: "research-subagent" }),
    subagent({ type: "skill", name: "source-reliability", path: "/skills/source-reliability/SKILL.md", state: "applied" }),
    subagent({ type: "mcp_call", id: "m1", tool: "lookup", server: "pricing-db", args: { sku: "NTB-7" } }),
    subagent({ type: "tool_call", id: "t1", tool: "unit_convert", args: { value: 412 } }),
    subagent({ type: "mcp_result", id: "m1", tool: "lookup", server: "pricing-db", ok: false, summary: "ERROR [transient] timeout", bytes: 0, error_class: "transient" }),
    subagent({ type: "tool_result", id: "t1", tool: "unit_convert", ok: true, summary: "412 Wh/kg = 1.48 MJ/kg", bytes: 22 }),
  ]);
  const lane = [...model.lanes.values()][0]!;
  assert.deepEqual(lane.feed.map((item) => item.kind), ["skill", "call", "call"]);
  const [, mcp, tool] = lane.feed;
  assert.ok(mcp?.kind === "call" && mcp.via === "mcp" && mcp.call?.tool === "lookup" && mcp.result?.ok === false);
  assert.ok(tool?.kind === "call" && tool.via === "tool" && tool.result?.summary === "412 Wh/kg = 1.48 MJ/kg");
  assert.equal(model.spend().toolCalls, 2);
});

test("a paired reply gives back its answers, and a thread's answer is its last AI message after the last question", () => {
  const reply = clarificationReply(["Which region?", "Which years?"], ["Nordic", ""]);
  assert.deepEqual(answersOf(reply), ["Nordic", ""]);
  assert.equal(answersOf("Tell me about kelp."), undefined);
  assert.equal(
    lastAnswer([
      { type: "human", content: "q1" },
      { type: "ai", content: "first answer" },
      { type: "human", content: "q2" },
      { type: "ai", content: "", tool_calls: [{ name: "task", id: "t" }] },
      { type: "ai", content: "second answer" },
      { type: "ai", id: "do-not-render-1", content: "a harness note" },
    ]),
    "second answer",
  );
  assert.equal(lastAnswer([{ type: "human", content: "q" }]), undefined);
});
