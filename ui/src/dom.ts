// A few lines of DOM building: h("p", {class: "x"}, "text", child). Text is always set as text, never as
// HTML; the only HTML the UI inserts is the report, sanitized by DOMPurify (report-view.ts).

export type Child = Node | string | number | null | undefined | false | Child[];

type Handler = (event: Event) => void;

export interface Attrs {
  class?: string;
  text?: string;
  on?: Record<string, Handler>;
  dataset?: Record<string, string>;
  [attribute: string]: unknown;
}

const PROPERTIES = new Set(["value", "checked", "disabled", "hidden", "open", "selected", "required", "readOnly", "tabIndex"]);

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  if (attrs) {
    for (const [name, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "class") element.className = String(value);
      else if (name === "text") element.textContent = String(value);
      else if (name === "on") for (const [type, handler] of Object.entries(value as Record<string, Handler>)) element.addEventListener(type, handler);
      else if (name === "dataset") Object.assign(element.dataset, value);
      else if (PROPERTIES.has(name)) (element as unknown as Record<string, unknown>)[name] = value;
      else element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, children);
  return element;
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else parent.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
  }
}

export function replaceChildren(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

/**
 * Keyed children: `items` in order, each element made once by `make` and refreshed by `update` only when its
 * revision changed, so open <details>, focus and scroll positions survive every refresh.
 */
export function syncKeyed<T>(
  parent: Element,
  items: T[],
  key: (item: T) => string,
  rev: (item: T) => number,
  make: (item: T) => HTMLElement,
  update: (element: HTMLElement, item: T) => void,
): void {
  const existing = new Map<string, HTMLElement>();
  for (const child of Array.from(parent.children)) {
    const k = (child as HTMLElement).dataset.key;
    if (k) existing.set(k, child as HTMLElement);
  }
  let previous: Element | null = null;
  for (const item of items) {
    const k = key(item);
    let element = existing.get(k);
    if (!element) {
      element = make(item);
      element.dataset.key = k;
      element.dataset.rev = "-1";
    }
    existing.delete(k);
    if (element.dataset.rev !== String(rev(item))) {
      update(element, item);
      element.dataset.rev = String(rev(item));
    }
    const expected: Element | null = previous ? previous.nextElementSibling : parent.firstElementChild;
    if (expected !== element) parent.insertBefore(element, expected);
    previous = element;
  }
  for (const stale of existing.values()) stale.remove();
}
