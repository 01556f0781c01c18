// A delivered chart in the report: the server's drawing of it (GET /charts/...), its caption saying what was
// checked, a note per point that does not check out, and its data table on demand.

import { chartUrl } from "../api";
import { h } from "../dom";
import { chartValue, superscript } from "../markdown";
import type { DeliveredChart } from "../markdown";

export function chartFigure(chart: DeliveredChart, number: number, threadId: string | undefined, runId: string | undefined): HTMLElement {
  const failing = chart.points.map((p, i) => [p, i] as const).filter(([p]) => p.check.verdict !== "supported");
  const noteOf = new Map(failing.map(([, i], n) => [i, n + 1]));
  const tableId = `chart-data-${chart.id}-${number}`;
  const unit = chart.unit ? ` (${chart.unit})` : "";
  const table = h(
    "table",
    { id: tableId, class: "chart-data", hidden: true },
    h("thead", null, h("tr", null, [chart.x_label || "Label", `${chart.y_label || "Value"}${unit}`, "Source", "Check"].map((text) => h("th", { text })))),
    h(
      "tbody",
      null,
      chart.points.map((point, i) =>
        h(
          "tr",
          { class: noteOf.has(i) ? "failing" : "checked" },
          h("td", { text: String(point.x) }),
          h("td", { class: "number", text: chartValue(point.y) }),
          h("td", { text: point.cite === null ? "none" : `[${point.cite}]` }),
          h("td", { text: noteOf.has(i) ? `does not check out ${superscript(noteOf.get(i)!)}` : "checked" }),
        ),
      ),
    ),
  );
  const toggle = h("button", {
    type: "button",
    class: "link-button chart-data-toggle",
    "aria-expanded": "false",
    "aria-controls": tableId,
    text: "Show data",
    on: {
      click: (event: Event) => {
        const button = event.currentTarget as HTMLButtonElement;
        table.hidden = !table.hidden;
        button.setAttribute("aria-expanded", String(!table.hidden));
        button.textContent = table.hidden ? "Show data" : "Hide data";
      },
    },
  });
  const image =
    chart.drawn && threadId
      ? h("img", { class: "chart-image", src: chartUrl(threadId, runId, chart.id), alt: altText(chart), loading: "lazy" })
      : null;
  const lead = chart.drawn ? chart.caption : `Chart not drawn: ${chart.reason ?? "its points do not check out"}. ${chart.caption}`;
  return h(
    "figure",
    { class: `chart${chart.drawn ? "" : " not-drawn"}`, "data-chart-id": chart.id },
    image,
    h(
      "figcaption",
      null,
      h("strong", { text: `Chart: ${chart.title}. ` }),
      lead,
      failing.length
        ? h(
            "ul",
            { class: "chart-notes" },
            failing.map(([point], n) =>
              h(
                "li",
                null,
                `${superscript(n + 1)} ${point.x}: ${chartValue(point.y)}${chart.unit ? ` ${chart.unit}` : ""}${point.cite === null ? "" : ` [${point.cite}]`} — ${point.check.reason ?? "does not check out"}.`,
                point.check.sentence ? h("q", { class: "source-sentence", text: point.check.sentence }) : null,
              ),
            ),
          )
        : null,
      " ",
      toggle,
    ),
    table,
  );
}

function altText(chart: DeliveredChart): string {
  const first = chart.points[0];
  const last = chart.points[chart.points.length - 1];
  const span = first && last ? `; ${chart.points.length} points, from ${first.x} to ${last.x}` : "";
  return `${chart.kind} chart: ${chart.title}${span}.`;
}
