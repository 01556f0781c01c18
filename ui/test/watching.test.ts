// The Watching list's words: when the next run comes, and how the last one ended.

import assert from "node:assert/strict";
import { test } from "node:test";

import { formatUntil, lastRunWords } from "../src/views/watching";
import type { DigestSummary } from "../src/views/watching";

const NOW = Date.parse("2026-12-07T07:50:00Z");

function digest(changes: Partial<DigestSummary>): DigestSummary {
  return {
    run_id: "r1", thread_id: "t1", finished_at: "2026-12-07T07:00:00Z", status: "report_delivered", outcome: "answered",
    failed: false, material: true, headline: "1 new finding since 2026-11-30 08:00 UTC", cost_usd: 0.01,
    report_path: "/reports/t1/r1", thread_path: "/ui/threads/t1", ...changes,
  };
}

test("the next run reads as a time to come, and one already due says so", () => {
  assert.equal(formatUntil("2026-12-07T08:00:00Z", NOW), "in 10 min");
  assert.equal(formatUntil("2026-12-07T10:50:00Z", NOW), "in 3 h");
  assert.equal(formatUntil("2026-12-07T07:49:00Z", NOW), "due");
  assert.equal(formatUntil(null, NOW), "");
});

test("the last run says its outcome, or that it failed and why", () => {
  assert.equal(lastRunWords(undefined), "No run yet");
  assert.equal(lastRunWords(digest({})), "Last run: answered");
  assert.equal(lastRunWords(digest({ failed: true, status: "config_error", outcome: null })), "Last run failed (config error)");
});
