// Pieces every view uses: the site badge (the domain's initials), generic field lists, links, and Markdown
// rendered safely.

import DOMPurify from "dompurify";
import { marked } from "marked";

import { h } from "../dom";
import type { Child } from "../dom";
import { domainHue, domainInitials, hostOf } from "../format";
import { imageLabel, isOwnImage } from "../markdown";

/**
 * The domain's initials in its own colour. No favicon: loading one from each cited site would tell those sites
 * who reads which report (the page's CSP allows images from this server only).
 */
export function siteBadge(domain: string): HTMLElement {
  return h("span", { class: "site-badge", "aria-hidden": "true", style: `--hue: ${domainHue(domain)}` }, h("span", { class: "initials", text: domainInitials(domain) }));
}

/**
 * Markdown a run wrote, as sanitized DOM: links to the web open in a new tab, and an image shows only when this
 * server serves it; any other becomes a link to its address (or a note), so nothing a report names is loaded.
 */
export function markdownFragment(markdown: string): DocumentFragment {
  const html = marked.parse(markdown, { async: false, gfm: true }) as string;
  const fragment = DOMPurify.sanitize(html, { RETURN_DOM_FRAGMENT: true });
  for (const link of Array.from(fragment.querySelectorAll("a[href]"))) {
    if (/^https?:/i.test(link.getAttribute("href") ?? "")) {
      link.setAttribute("target", "_blank");
      link.setAttribute("rel", "noopener noreferrer");
    }
  }
  for (const image of Array.from(fragment.querySelectorAll("img"))) {
    const src = image.getAttribute("src") ?? "";
    if (isOwnImage(src, location.href)) {
      image.removeAttribute("srcset");
      continue;
    }
    const label = imageLabel(src, image.getAttribute("alt") ?? "");
    image.replaceWith(/^https?:/i.test(src) ? externalLink(src, label) : h("span", { class: "image-not-shown", text: label }));
  }
  return fragment;
}

/** A link that opens in a new tab; a source with no web address (a corpus:// passage) is named, not linked. */
export function externalLink(url: string, ...children: Child[]): HTMLElement {
  const content = children.length ? children : [url];
  if (!/^https?:/i.test(url)) return h("span", { class: "local-source", title: url }, ...content);
  return h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, ...content);
}

export function domainOf(url: string, domain?: string | null): string {
  return domain || hostOf(url);
}

/** Fields that hold code or program output: folded whatever their length (a script's code is read on demand). */
const FOLDED = new Set(["code", "script", "source_code", "stdout", "stderr", "output", "traceback"]);

function valueText(value: unknown): string {
  if (typeof value === "string") return value;
  return JSON.stringify(value, null, 2);
}

/**
 * Fields shown as they are: short values inline, long or structured ones (code, output, JSON) folded in a
 * <details>, so an event or field newer than this UI still reaches the reader.
 */
export function fieldList(entries: [string, unknown][], className = "fields"): HTMLElement | null {
  if (!entries.length) return null;
  return h(
    "dl",
    { class: className },
    entries.map(([name, value]) => {
      const text = valueText(value);
      const long = FOLDED.has(name) || text.length > 120 || text.includes("\n");
      return [
        h("dt", { text: name.replaceAll("_", " ") }),
        h("dd", null, long ? h("details", { class: "folded" }, h("summary", { text: `${text.split("\n").length} lines · ${text.length.toLocaleString("en-US")} characters` }), h("pre", null, h("code", { text }))) : text),
      ];
    }),
  );
}
