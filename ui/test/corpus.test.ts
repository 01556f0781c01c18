import assert from "node:assert/strict";
import { test } from "node:test";

import { UnexpectedAnswer, corporaOf, hitHeading, hitPlace, searchAnswerOf, searchPageUrl, searchProblem, searchSummary, snippetPieces } from "../src/corpus";

const ANSWER = {
  corpus: "handbook",
  query: "how long may a gauge stay off?",
  method: "hybrid",
  note: "",
  hits: [
    {
      id: "p1",
      title: "Halvorsen Handbook — Maintenance › Recalibration (notes/maintenance.md)",
      url: "corpus://handbook/notes/maintenance.md#recalibration",
      score: 0.83,
      snippet: "A **gauge** that has been powered down for more than 72 hours",
      path: "notes/maintenance.md",
      anchor: "recalibration",
      text: "A gauge that has been powered down for more than 72 hours must be recalibrated before it reports again.",
    },
    { id: "p2", title: "Budget", url: "corpus://handbook/office/budget.xlsx#sheet=Costs!A1", score: 0.2, snippet: "", path: "office/budget.xlsx", anchor: null },
  ],
};

test("a search answer becomes hits with their document, anchor, snippet and whole passage", () => {
  const answer = searchAnswerOf(ANSWER);
  assert.equal(answer.hits.length, 2);
  assert.deepEqual(hitPlace(answer.hits[0]!), { document: "notes/maintenance.md", anchor: "#recalibration" });
  assert.deepEqual(hitPlace(answer.hits[1]!), { document: "office/budget.xlsx", anchor: null });
  assert.equal(answer.hits[1]!.text, "");
  assert.equal(hitHeading(answer.hits[0]!, "Halvorsen Handbook"), "Maintenance › Recalibration (notes/maintenance.md)");
  assert.equal(hitHeading(answer.hits[1]!, "Halvorsen Handbook"), "Budget");
});

test("an answer without hits or a hit without its URL is refused, not half shown", () => {
  assert.throws(() => searchAnswerOf({ detail: "no searchable corpus" }), UnexpectedAnswer);
  assert.throws(() => searchAnswerOf({ ...ANSWER, hits: [{ ...ANSWER.hits[0], url: undefined }] }), /no text url/);
  assert.throws(() => corporaOf([]), UnexpectedAnswer);
});

test("the snippet's marked terms are pieces of their own, the rest stays text in order", () => {
  assert.deepEqual(snippetPieces("A **gauge** powered **down**."), [
    { text: "A ", marked: false },
    { text: "gauge", marked: true },
    { text: " powered ", marked: false },
    { text: "down", marked: true },
    { text: ".", marked: false },
  ]);
  assert.deepEqual(snippetPieces("plain"), [{ text: "plain", marked: false }]);
  assert.deepEqual(snippetPieces(""), []);
});

test("the summary says how many passages, for what, where and how the corpus was searched", () => {
  const answer = searchAnswerOf(ANSWER);
  assert.equal(searchSummary(answer, "Halvorsen Handbook"), "2 passages for \u201chow long may a gauge stay off?\u201d in Halvorsen Handbook, searched by meaning and words.");
  assert.equal(searchSummary({ ...answer, method: "keywords", hits: [] }, ""), "No passage matches \u201chow long may a gauge stay off?\u201d in handbook, searched by words only.");
});

test("an empty query or no corpus is caught before the server is asked", () => {
  assert.equal(searchProblem("handbook", "  "), "Type what to look for.");
  assert.equal(searchProblem("", "gauge"), "Choose a corpus to search.");
  assert.equal(searchProblem("handbook", "gauge"), undefined);
});

test("the page's URL carries the corpus and the query, so a search reloads", () => {
  assert.equal(searchPageUrl("", "handbook", " gauge off "), "/ui/search?corpus=handbook&q=gauge+off");
  assert.equal(searchPageUrl("/prefix"), "/prefix/ui/search");
});

test("the corpora list keeps names, falls back to the name for a title and counts documents", () => {
  assert.deepEqual(corporaOf({ corpora: [{ name: "handbook", title: "", documents: 9, passages: 30 }] }), [
    { name: "handbook", title: "handbook", description: "", documents: 9, passages: 30 },
  ]);
});
