import assert from "node:assert/strict";
import { test } from "node:test";

import {
  CHART_CLOSE,
  CHART_OPEN,
  chartPlaceholders,
  chartValue,
  superscript,
  MARK_CLOSE,
  MARK_OPEN,
  citedNumbers,
  claimsFrom,
  imageLabel,
  isFlagged,
  isOwnImage,
  locateClaim,
  matchingSentence,
  sentenceMarks,
  sourceEntries,
  splitSources,
  withSentinels,
} from "../src/markdown";
import { checkedForMeaning, decidedByWords, verdictWords } from "../src/format";

const REPORT = [
  "# Sodium-glass batteries",
  "",
  "The Halvorsen cell reaches 412 Wh/kg [1]. It costs 40 $/kWh [1] [unverified]. Both labs agree [1, 2].",
  "",
  "```",
  "## Sources",
  "```",
  "",
  "## Sources",
  "[1] The Halvorsen cell — http://127.0.0.1:9/articles/halvorsen-cell.",
  "- [2]: Second source (https://example.org/b)",
  "3. A label only",
].join("\n");

test("the Sources section is the last Sources heading outside code, and its entries carry titles and URLs", () => {
  const sections = splitSources(REPORT);
  assert.ok(sections.body.includes("```\n## Sources\n```"));
  assert.ok(sections.sources.startsWith("## Sources"));
  assert.deepEqual(sourceEntries(sections.sources), [
    { index: 1, title: "The Halvorsen cell", url: "http://127.0.0.1:9/articles/halvorsen-cell" },
    { index: 2, title: "Second source", url: "https://example.org/b" },
    { index: 3, title: "A label only", url: undefined },
  ]);
});

test("citation markers expand lists and ranges", () => {
  assert.deepEqual(citedNumbers("1, 3-5"), [1, 3, 4, 5]);
  assert.deepEqual(citedNumbers("2–3"), [2, 3]);
});

test("claims are read from the state's claim entries, in report order", () => {
  const claims = claimsFrom({
    citations: [
      { claim: "It reaches 412 Wh/kg.", indexes: [1], verdict: "supported", tokens: [], detail: "" },
      { claim: "It costs 40 $/kWh.", indexes: [1], verdict: "unsupported_number", tokens: ["40 $/kWh"], detail: "40 $/kWh is not in [1]", sources: [{ index: 1, url: "u", sentence: "It costs 61 dollars per kWh." }] },
      { claim: "Both labs agree.", indexes: [1, 2], verdict: "conflicting", tokens: ["100 m", "137 m"] },
    ],
  });
  assert.deepEqual(claims, [
    { text: "It reaches 412 Wh/kg.", indexes: [1], verdict: "supported", tokens: [], why: undefined, decidedBy: undefined, sentences: [] },
    { text: "It costs 40 $/kWh.", indexes: [1], verdict: "unsupported_number", tokens: ["40 $/kWh"], why: "40 $/kWh is not in [1]", decidedBy: undefined, sentences: [{ index: 1, sentence: "It costs 61 dollars per kWh." }] },
    { text: "Both labs agree.", indexes: [1, 2], verdict: "conflicting", tokens: ["100 m", "137 m"], why: undefined, decidedBy: undefined, sentences: [] },
  ]);
});

test("a claim is found verbatim, or as the sentence sharing most of its words", () => {
  const body = splitSources(REPORT).body;
  const exact = locateClaim(body, "The Halvorsen cell reaches 412 Wh/kg [1].");
  assert.equal(body.slice(exact!.start, exact!.end), "The Halvorsen cell reaches 412 Wh/kg [1].");
  const fuzzy = locateClaim(body, "It costs 40 $/kWh");
  assert.equal(body.slice(fuzzy!.start, fuzzy!.end), "It costs 40 $/kWh [1] [unverified].");
  assert.equal(locateClaim(body, "Something the report never says about zebras"), null);
});

test("marks cover located claims, then [unverified] sentences, never overlapping", () => {
  const body = splitSources(REPORT).body;
  const marks = sentenceMarks(body, [{ text: "Both labs agree.", indexes: [1, 2], verdict: "conflicting", tokens: [] }]);
  assert.deepEqual(marks.map((m) => body.slice(m.start, m.end)), ["It costs 40 $/kWh [1] [unverified].", "Both labs agree [1, 2]."]);
  assert.deepEqual(marks[0]!.indexes, [1]);
  const marked = withSentinels(body, marks);
  assert.ok(marked.includes(`${MARK_OPEN}0\uE001It costs 40 $/kWh [1] [unverified].${MARK_CLOSE}`));
});

test("the matching sentence of a source is the one holding the claim's tokens", () => {
  const page = "Intro text here. The Halvorsen cell stores 412 Wh/kg in lab tests. Prices were not disclosed.";
  assert.equal(matchingSentence(page, "The cell reaches 412 Wh/kg.", ["412"]), "The Halvorsen cell stores 412 Wh/kg in lab tests.");
  assert.equal(matchingSentence(page, "zebras everywhere", ["zebra"]), null);
});

test("an unchecked claim is neither flagged nor shown as checked, and says why", () => {
  const [unchecked] = claimsFrom({
    citations: [{ claim: "The evidence found answers the question.", indexes: [1], verdict: "unchecked", decided_by: "not_checked" }],
  });
  assert.equal(isFlagged(unchecked!.verdict), false);
  assert.equal(checkedForMeaning(unchecked!.verdict, unchecked!.decidedBy), false);
  assert.equal(verdictWords("unchecked", "not_checked"), "Not checked: nothing in it to look up in the cited text, and no judge verdict");
  assert.equal(isFlagged("conflicting"), true);
  assert.equal(sentenceMarks("The evidence found answers the question [1].", [unchecked!]).length, 0, "an unchecked claim is not marked in place");
});

test("a claim's decided_by is read, and only a judged claim is called supported by the cited text", () => {
  const [judged, unchecked] = claimsFrom({
    citations: [
      { claim: "It was a wonder.", indexes: [1], verdict: "supported", decided_by: "judged" },
      { claim: "It was admired.", indexes: [1], verdict: "supported", decided_by: "not_checked" },
    ],
  });
  assert.equal(judged!.decidedBy, "judged");
  assert.equal(verdictWords("supported", judged!.decidedBy), "Judged supported by the cited text");
  assert.equal(verdictWords("supported", unchecked!.decidedBy), "Cites a source that was read; not checked for meaning");
  assert.equal(checkedForMeaning("supported", "not_checked"), false);
  assert.equal(checkedForMeaning("unsupported_name", "names_and_direction"), true);
  for (const decidedBy of ["figures_and_quotes", "names_and_direction", "not_checked", undefined]) {
    assert.notEqual(verdictWords("supported", decidedBy), "Supported by the cited text");
  }
  assert.equal(verdictWords("unsupported_name", "names_and_direction"), "A name in this sentence is not in the cited text");
  assert.equal(verdictWords("contradicted", "judged"), "Judged contradicted by the cited text");
  assert.equal(verdictWords("contradicted", "names_and_direction"), "The cited text says otherwise");
  assert.equal(verdictWords("not_supported", "judged"), "Judged not supported by the cited text");
  assert.equal(decidedByWords("judged"), "judged by the model");
  assert.equal(decidedByWords(undefined), "");
});

test("only this server's own images are shown: any other address, or an odd scheme, is not", () => {
  const page = "http://127.0.0.1:2024/ui/threads/t1";
  assert.equal(isOwnImage("/reports/t1/chart.png", page), true);
  assert.equal(isOwnImage("http://127.0.0.1:2024/ui/assets/logo.png", page), true);
  assert.equal(isOwnImage("http://127.0.0.1:9000/p.png", page), false, "another port is another origin");
  assert.equal(isOwnImage("https://tracker.example/pixel.png", page), false);
  assert.equal(isOwnImage("//tracker.example/pixel.png", page), false);
  assert.equal(isOwnImage("data:image/png;base64,iVBORw0KGgo=", page), false);
  assert.equal(isOwnImage("javascript:alert(1)", page), false);
  assert.equal(isOwnImage("", page), false);
});

test("an image not shown reads as a link to a web address or a note naming it", () => {
  assert.equal(imageLabel("https://cdn.example/p.png", "Price chart"), "Image: Price chart");
  assert.equal(imageLabel("https://cdn.example/p.png", ""), "Image");
  assert.equal(imageLabel("file:///etc/passwd", "secret"), "Image not shown: secret");
});

test("a delivered chart block becomes a placeholder paragraph, a chart the product did not check stays code", () => {
  const checked = JSON.stringify({
    id: "chart-1", kind: "line", title: "Output", unit: "GWh", drawn: true, caption: "Checked: all 1",
    points: [{ x: 2021, y: 47.5, cite: 1, check: { verdict: "supported" } }],
  });
  const unchecked = JSON.stringify({ kind: "line", title: "Raw", points: [{ x: 2021, y: 1, cite: 1 }] });
  const body = `Intro [1].\n\n\`\`\`chart\n${checked}\n\`\`\`\n\nMiddle.\n\n\`\`\`chart\n${unchecked}\n\`\`\`\n`;
  const { text, charts } = chartPlaceholders(body);
  assert.equal(charts.length, 1);
  assert.equal(charts[0]!.title, "Output");
  assert.ok(text.includes(`${CHART_OPEN}0${CHART_CLOSE}`));
  assert.ok(text.includes(unchecked), "an unchecked block is left as written");
  assert.equal(superscript(12), "¹²");
  assert.equal(chartValue(1240), "1,240");
});
