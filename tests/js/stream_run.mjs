// A generic client of the agent server: the LangGraph JS SDK and Ajv, as a JS frontend would use them.
// tests/e2e/test_js_client.py drives it; it prints one JSON report on stdout.
//
// Usage: node stream_run.mjs values|custom|rejoin URL GRAPH_ID MESSAGE
//
// Both modes find the graph's system assistant the way langchain's deep-agents-ui does, start one run on a
// new thread with input {messages: [{role: "user", content: MESSAGE}]} and read the stream to its end.
//
// values  streams ["values", "messages-tuple"] with config.recursion_limit 100, as deep-agents-ui does.
//         Report: {parts, keys, messages, final_report}: the number of stream parts per event name, and the
//         keys, the messages and the final report of the last values part.
// custom  compiles schema/events.schema.json with Ajv 2020 in strict mode (an unknown keyword throws),
//         streams ["messages", "updates", "custom"] with streamSubgraphs and validates every custom event.
//         Report: {parts, validated, failures, types, subagent_events, untyped_definitions}: failures lists
//         each event that did not validate with its namespace and Ajv's errors; subagent_events the
//         namespace, type, role and task_id of every event from a sub-graph; untyped_definitions the event
//         definitions whose `required` lacks `type`.
// rejoin  streams the way the web UI (ui/src/api.ts) does: ["messages-tuple", "updates", "custom"] with
//         streamSubgraphs and streamResumable, then, once the run has ended, joins it from event "-1" as a
//         reloaded page does. Every custom event of both streams is validated in Ajv strict mode.
//         Report: {live, replayed, live_messages, replayed_messages, failures}: live and replayed are the
//         custom events of each stream, in order; *_messages the number of `messages` parts.
//
// Exit status: 0 when the run streamed to its end (whatever the report says), 2 on bad usage, 1 otherwise.

import { readFileSync } from "node:fs";

import { Client } from "@langchain/langgraph-sdk";
import Ajv2020 from "ajv/dist/2020.js";

const SCHEMA_URL = new URL("../../schema/events.schema.json", import.meta.url);

async function systemAssistant(client, graphId) {
  const found = await client.assistants.search({ graphId });
  const assistant = found.find((a) => a.metadata?.created_by === "system");
  if (!assistant) throw new Error(`the server has no system assistant for graph ${graphId}`);
  return assistant.assistant_id;
}

async function* streamRun(url, graphId, message, options, client = new Client({ apiUrl: url })) {
  const assistantId = await systemAssistant(client, graphId);
  const { thread_id: threadId } = await client.threads.create();
  yield { event: "thread", data: { thread_id: threadId } };
  yield* client.runs.stream(threadId, assistantId, {
    input: { messages: [{ role: "user", content: message }] },
    ...options,
  });
}

function countPart(parts, event) {
  parts[event] = (parts[event] ?? 0) + 1;
}

async function valuesReport(url, graphId, message) {
  const parts = {};
  let last = {};
  const stream = streamRun(url, graphId, message, {
    streamMode: ["values", "messages-tuple"],
    config: { recursion_limit: 100 },
  });
  for await (const { event, data } of stream) {
    if (event === "thread") continue;
    countPart(parts, event);
    if (event === "values") last = data;
  }
  return { parts, keys: Object.keys(last).sort(), messages: last.messages ?? [], final_report: last.final_report ?? null };
}

function untypedDefinitions(schema) {
  return schema.oneOf
    .map(({ $ref }) => $ref.replace("#/$defs/", ""))
    .filter((name) => !(schema.$defs[name].required ?? []).includes("type"));
}

async function customReport(url, graphId, message) {
  const schema = JSON.parse(readFileSync(SCHEMA_URL, "utf8"));
  const validate = new Ajv2020({ strict: true }).compile(schema);
  const report = { parts: {}, validated: 0, failures: [], subagent_events: [] };
  const types = new Set();
  const stream = streamRun(url, graphId, message, {
    streamMode: ["messages", "updates", "custom"],
    streamSubgraphs: true,
  });
  for await (const { event, data } of stream) {
    if (event === "thread") continue;
    countPart(report.parts, event);
    const [channel, ...path] = event.split("|");
    if (channel !== "custom") continue;
    const namespace = path.join("|");
    report.validated += 1;
    types.add(data.type);
    if (!validate(data)) report.failures.push({ namespace, event: data, errors: validate.errors });
    if (namespace) {
      report.subagent_events.push({ namespace, type: data.type, role: data.role, task_id: data.task_id });
    }
  }
  return { ...report, types: [...types].sort(), untyped_definitions: untypedDefinitions(schema) };
}

async function rejoinReport(url, graphId, message) {
  const schema = JSON.parse(readFileSync(SCHEMA_URL, "utf8"));
  const validate = new Ajv2020({ strict: true }).compile(schema);
  const client = new Client({ apiUrl: url });
  const report = { live: [], replayed: [], live_messages: 0, replayed_messages: 0, failures: [] };
  const take = (events, counter, { event, data }) => {
    const channel = event.split("|")[0];
    if (channel === "messages") report[counter] += 1;
    if (channel !== "custom") return;
    if (!validate(data)) report.failures.push({ event: data, errors: validate.errors });
    events.push(data);
  };
  let threadId;
  let runId;
  const stream = streamRun(url, graphId, message, {
    streamMode: ["messages-tuple", "updates", "custom"],
    streamSubgraphs: true,
    streamResumable: true,
  }, client);
  for await (const part of stream) {
    if (part.event === "thread") threadId = part.data.thread_id;
    else if (part.event === "metadata") runId = part.data.run_id;
    else take(report.live, "live_messages", part);
  }
  for await (const part of client.runs.joinStream(threadId, runId, { lastEventId: "-1" })) {
    take(report.replayed, "replayed_messages", part);
  }
  return report;
}

const MODES = { values: valuesReport, custom: customReport, rejoin: rejoinReport };

const [mode, url, graphId, message] = process.argv.slice(2);
if (!MODES[mode] || !url || !graphId || !message) {
  console.error("usage: node stream_run.mjs values|custom|rejoin URL GRAPH_ID MESSAGE");
  process.exit(2);
}
process.stdout.write(`${JSON.stringify(await MODES[mode](url, graphId, message))}\n`);
