// Pieces every view uses: the site badge (favicon, or the domain's initials), generic field lists, links.

import { h } from "../dom";
import type { Child } from "../dom";
import { domainHue, domainInitials, hostOf } from "../format";

/** Favicons come from the site itself; IP literals and local hosts never have one worth a request. */
function faviconUrl(domain: string): string | null {
  const host = domain.replace(/:\d+$/, "");
  if (!host || host === "localhost" || /^[\d.]+$/.test(host) || host.includes(":")) return null;
  return `https://${host}/favicon.ico`;
}

/** The domain's initials in its own colour; its favicon on top once (and only if) it loads. */
export function siteBadge(domain: string): HTMLElement {
  const badge = h("span", { class: "site-badge", "aria-hidden": "true", style: `--hue: ${domainHue(domain)}` }, h("span", { class: "initials", text: domainInitials(domain) }));
  const src = faviconUrl(domain);
  if (src) {
    const img = h("img", { alt: "", width: 16, height: 16, loading: "lazy", referrerpolicy: "no-referrer", decoding: "async" });
    img.addEventListener("load", () => img.naturalWidth > 1 && badge.classList.add("has-icon"));
    img.addEventListener("error", () => img.remove());
    img.src = src;
    badge.appendChild(img);
  }
  return badge;
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
