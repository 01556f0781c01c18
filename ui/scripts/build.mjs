// Builds the web UI into dist/ (served by the agent server at /ui), and with --tests its unit tests into
// dist-tests/ (run by `node --test dist-tests/`).
//
// Steps, each of which fails the build:
// 1. generate src/generated/events.ts from the committed ../schema/events.schema.json (json-schema-to-typescript),
//    so the UI is type-checked against the protocol the server publishes, with the vocabulary the schema
//    publishes as constants (event types, reasons per status state, halt reasons, end words, outcome notices);
// 2. type-check everything with tsc (esbuild does not type-check): a renamed or removed event field breaks here;
// 3. bundle with esbuild.

import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import * as esbuild from "esbuild";
import { compile } from "json-schema-to-typescript";

const UI = dirname(dirname(fileURLToPath(import.meta.url)));
const SCHEMA = join(UI, "..", "schema", "events.schema.json");
const GENERATED = join(UI, "src", "generated", "events.ts");
const DIST = join(UI, "dist");
const DIST_TESTS = join(UI, "dist-tests");
const withTests = process.argv.includes("--tests");

// Property titles ("Query", "Task Id") would each become a named alias (Query1, TaskId2, ...); without them
// every field is typed inline on its event. Inside a ``properties`` map the keys are field names (an event
// may have a field called ``title``), so only schema keywords are dropped.
function withoutTitles(node, isPropertyMap = false) {
  if (Array.isArray(node)) return node.map((item) => withoutTitles(item));
  if (node === null || typeof node !== "object") return node;
  const out = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === "title" && !isPropertyMap) continue;
    out[key] = withoutTitles(value, key === "properties" && !isPropertyMap);
  }
  return out;
}

function protocolVersion(schema) {
  const match = /^protocol_version (\d+)$/.exec(schema.$comment ?? "");
  if (!match) throw new Error(`${SCHEMA}: $comment should be "protocol_version N", got ${JSON.stringify(schema.$comment)}`);
  return Number(match[1]);
}

function eventTypes(schema) {
  return schema.oneOf.map(({ $ref }) => {
    const definition = schema.$defs[$ref.replace("#/$defs/", "")];
    const type = definition.properties?.type?.const;
    if (typeof type !== "string") throw new Error(`${SCHEMA}: ${$ref} has no const type`);
    return type;
  });
}

// The status union: the models per state that the schema's ``Status`` definition is one of.
function statusModels(schema) {
  const status = schema.oneOf
    .map(({ $ref }) => schema.$defs[$ref.replace("#/$defs/", "")])
    .find((definition) => definition.properties?.type?.const === "status");
  if (!Array.isArray(status?.oneOf)) throw new Error(`${SCHEMA}: the status event is no union of models per state`);
  return status.oneOf.map(({ $ref }) => schema.$defs[$ref.replace("#/$defs/", "")]);
}

// The closed code set a status model's ``reason`` is typed by (an enum definition, its values as a oneOf of
// consts, or one const); none when open.
function closedCodes(schema, reason) {
  if (typeof reason?.const === "string") return [reason.const];
  const definition = reason?.$ref ? schema.$defs[reason.$ref.replace("#/$defs/", "")] : undefined;
  if (Array.isArray(definition?.enum)) return definition.enum;
  if (Array.isArray(definition?.oneOf)) return definition.oneOf.map(({ const: value }) => value);
  return undefined;
}

// The closed code sets the schema lists per status state, e.g. the end reasons of ``done``.
function reasonsByState(schema) {
  const out = {};
  for (const model of statusModels(schema)) {
    const state = model.properties?.state?.const;
    const codes = closedCodes(schema, model.properties?.reason);
    if (typeof state === "string" && codes) out[state] = codes;
  }
  if (!out.done) throw new Error(`${SCHEMA}: the status event lists no end reasons for state done`);
  return out;
}

// The end reasons that are halts (``HaltReason``), as the server's stop table names them.
function haltReasons(schema) {
  const codes = schema.$defs.HaltReason?.enum;
  if (!Array.isArray(codes) || codes.length === 0) throw new Error(`${SCHEMA}: no HaltReason definition`);
  return codes;
}

// The words a frontend shows per end reason on the end line: each ``EndReason`` value's description.
function endWords(schema) {
  const values = schema.$defs.EndReason?.oneOf;
  if (!Array.isArray(values)) throw new Error(`${SCHEMA}: the EndReason definition gives no words per value`);
  return Object.fromEntries(values.map(({ const: value, description }) => [value, description ?? ""]));
}

// The notice a frontend shows per outcome: each ``Outcome`` value's description ("" when it needs none).
function outcomeNotices(schema) {
  const values = schema.$defs.Outcome?.oneOf;
  if (!Array.isArray(values)) throw new Error(`${SCHEMA}: the Outcome definition gives no notice per value`);
  return Object.fromEntries(values.map(({ const: value, description }) => [value, description ?? ""]));
}

async function generateTypes() {
  const schema = JSON.parse(readFileSync(SCHEMA, "utf8"));
  const defs = Object.fromEntries(
    Object.entries(schema.$defs).map(([name, definition]) => [name, { ...withoutTitles(definition), title: name }]),
  );
  const types = await compile({ ...schema, $defs: defs }, "DeepResearchAgentEvent", {
    bannerComment: "",
    additionalProperties: false,
    unreachableDefinitions: true,
    format: false,
  });
  const reasons = reasonsByState(schema);
  const source = [
    "// Generated by ui/scripts/build.mjs from schema/events.schema.json. Do not edit; it is not committed.",
    "/* eslint-disable */",
    types,
    `export const PROTOCOL_VERSION = ${protocolVersion(schema)};`,
    `export const EVENT_TYPES = ${JSON.stringify(eventTypes(schema))} as const;`,
    `export const END_REASONS = ${JSON.stringify(reasons.done)} as const;`,
    `export const REASONS_BY_STATE = ${JSON.stringify(reasons)} as const;`,
    `export const HALT_REASONS: ReadonlySet<string> = new Set(${JSON.stringify(haltReasons(schema))});`,
    `export const END_WORDS: Record<EndReason, string> = ${JSON.stringify(endWords(schema))};`,
    `export const OUTCOME_NOTICES: Record<Outcome, string> = ${JSON.stringify(outcomeNotices(schema))};`,
    "export type EventType = DeepResearchAgentEvent[\"type\"];",
    "",
  ].join("\n");
  mkdirSync(dirname(GENERATED), { recursive: true });
  writeFileSync(GENERATED, source);
}

function typeCheck() {
  const tsc = join(UI, "node_modules", "typescript", "bin", "tsc");
  const done = spawnSync(process.execPath, [tsc, "--noEmit", "-p", join(UI, "tsconfig.json")], { stdio: "inherit" });
  if (done.status !== 0) throw new Error("tsc found type errors (see above)");
}

async function bundle() {
  rmSync(DIST, { recursive: true, force: true });
  mkdirSync(join(DIST, "assets"), { recursive: true });
  await esbuild.build({
    entryPoints: { app: join(UI, "src", "main.ts"), style: join(UI, "static", "app.css") },
    outdir: join(DIST, "assets"),
    bundle: true,
    minify: true,
    sourcemap: true,
    format: "esm",
    target: ["es2022"],
    legalComments: "linked",
    logLevel: "warning",
  });
  cpSync(join(UI, "static", "index.html"), join(DIST, "index.html"));
}

async function bundleTests() {
  rmSync(DIST_TESTS, { recursive: true, force: true });
  const tests = readdirSync(join(UI, "test")).filter((name) => name.endsWith(".test.ts"));
  await esbuild.build({
    entryPoints: tests.map((name) => join(UI, "test", name)),
    outdir: DIST_TESTS,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: ["node18"],
    logLevel: "warning",
  });
}

try {
  await generateTypes();
  typeCheck();
  await bundle();
  if (withTests) await bundleTests();
  console.log(`web UI built into ${DIST}${withTests ? ` and its tests into ${DIST_TESTS}` : ""}`);
} catch (error) {
  console.error(`web UI build failed: ${error.message}`);
  process.exit(1);
}
