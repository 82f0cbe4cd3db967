// Small DOM building blocks. Views create their elements once and then patch
// only what changed, so focus, scroll position, open <details> and open
// confirmations survive every live update. Text always goes in through
// `textContent`, never HTML, and styling only through classes (the window's CSP
// forbids inline styles and scripts).

/** A child accepted by `h`: nodes, text, or nothing. */
export type Child = Node | string | null | undefined | false;

/** What `h` can set on a new element. */
export interface Props {
  class?: string;
  text?: string;
  attrs?: Record<string, string | null | undefined>;
  on?: { [K in keyof HTMLElementEventMap]?: (event: HTMLElementEventMap[K]) => void };
}

/** Creates an element with classes, attributes, listeners and children. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props.class) el.className = props.class;
  if (props.text !== undefined) el.textContent = props.text;
  for (const [name, value] of Object.entries(props.attrs ?? {})) {
    if (value !== null && value !== undefined) el.setAttribute(name, value);
  }
  for (const [type, listener] of Object.entries(props.on ?? {})) {
    el.addEventListener(type, listener as EventListener);
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child);
  }
  return el;
}

/**
 * Keeps the webview's own context menu (Back, Forward, Stop, Reload) out of the window, as a
 * native window has none: a right click opens it only over text the user selected (to copy it)
 * or in a text field (to paste). Installed once on the document.
 */
export function suppressBrowserContextMenu(doc: Document): void {
  doc.addEventListener("contextmenu", (event) => {
    const target = event.target;
    const editable = target instanceof HTMLElement && (target.isContentEditable || target.closest("textarea, input:not([type=checkbox]):not([type=radio]):not([type=button])") !== null);
    const selected = (doc.getSelection()?.toString() ?? "") !== "";
    if (!editable && !selected) event.preventDefault();
  });
}

/** Sets `textContent` only when it differs (keeps text selection and avoids layout work). */
export function setText(el: Element, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}

/** Sets an attribute only when it differs; `null` removes it. */
export function setAttr(el: Element, name: string, value: string | null): void {
  if (value === null) {
    if (el.hasAttribute(name)) el.removeAttribute(name);
  } else if (el.getAttribute(name) !== value) {
    el.setAttribute(name, value);
  }
}

/** Shows or hides an element with the `hidden` attribute. */
export function show(el: HTMLElement, visible: boolean): void {
  if (el.hidden === visible) el.hidden = !visible;
}

/** Replaces the children of `el` (for short lists that are cheap to rebuild and hold no focus). */
export function setChildren(el: Element, children: Node[]): void {
  el.replaceChildren(...children);
}

/**
 * A place in the tree where an element is present only while it is shown.
 * Used for things tests and assistive technology should not find when they
 * are not there (errors, confirmations), unlike `hidden`, which leaves them in
 * the DOM. The element object lives on, so its state survives being hidden.
 */
export class Slot<E extends HTMLElement = HTMLElement> {
  /** Marks the position; put this in the tree instead of `el`. */
  readonly anchor: Comment = document.createComment("");

  constructor(readonly el: E) {}

  /** Puts the element in place or takes it out. */
  set(present: boolean): void {
    if (present) {
      if (this.anchor.nextSibling !== this.el) this.anchor.after(this.el);
    } else if (this.el.parentNode) {
      this.el.remove();
    }
  }
}

let nextId = 0;

/** A document-unique id for aria relationships. */
export function uid(prefix: string): string {
  nextId += 1;
  return `${prefix}-${nextId}`;
}

/** A view of one keyed item: its root element and how to patch it. */
export interface KeyedView<T> {
  readonly root: HTMLElement;
  update(item: T): void;
}

/**
 * Keeps one view per key inside `container`, in item order. Existing views are
 * patched, not rebuilt; nodes are moved only when out of place and the row
 * holding focus is never moved, so a live update cannot steal focus.
 */
export class KeyedList<T, V extends KeyedView<T>> {
  private readonly views = new Map<string, V>();

  constructor(
    private readonly container: HTMLElement,
    private readonly key: (item: T) => string,
    private readonly create: (item: T) => V,
  ) {}

  /**
   * Brings the container in line with `items`. Returns true when the element
   * that had focus was inside a removed view, so the caller can move focus
   * somewhere sensible instead of leaving it on <body>.
   */
  reconcile(items: readonly T[]): boolean {
    const order: V[] = [];
    const seen = new Set<string>();
    for (const item of items) {
      const k = this.key(item);
      if (seen.has(k)) continue; // a duplicate key would steal the first view's node
      seen.add(k);
      let view = this.views.get(k);
      if (!view) {
        view = this.create(item);
        this.views.set(k, view);
      }
      view.update(item);
      order.push(view);
    }

    let lostFocus = false;
    for (const [k, view] of this.views) {
      if (seen.has(k)) continue;
      if (view.root.contains(document.activeElement)) lostFocus = true;
      view.root.remove();
      this.views.delete(k);
    }
    if (order.length === 0) return lostFocus;

    // Moving a node that holds focus blurs it, so the focused row is the
    // anchor: rows before it are placed leftwards from it, rows after it
    // rightwards. Rows already in place are not touched at all.
    const focused = document.activeElement;
    let anchorIndex = order.findIndex((v) => v.root.contains(focused));
    if (anchorIndex < 0) anchorIndex = 0;
    const anchor = order[anchorIndex]!.root;
    if (anchor.parentNode !== this.container) this.container.append(anchor);
    let next: ChildNode = anchor;
    for (let i = anchorIndex - 1; i >= 0; i--) {
      const node = order[i]!.root;
      if (node.nextSibling !== next) this.container.insertBefore(node, next);
      next = node;
    }
    let prev: ChildNode = anchor;
    for (let i = anchorIndex + 1; i < order.length; i++) {
      const node = order[i]!.root;
      if (prev.nextSibling !== node) this.container.insertBefore(node, prev.nextSibling);
      prev = node;
    }
    return lostFocus;
  }

  /** The view of `key`, if it is in the list. */
  get(key: string): V | undefined {
    return this.views.get(key);
  }

  /** All current views, in no particular order. */
  all(): IterableIterator<V> {
    return this.views.values();
  }
}

const SVG_NS = "http://www.w3.org/2000/svg";

const ICONS = {
  lock: "M5 7V5a3 3 0 0 1 6 0v2h.5A1.5 1.5 0 0 1 13 8.5v5a1.5 1.5 0 0 1-1.5 1.5h-7A1.5 1.5 0 0 1 3 13.5v-5A1.5 1.5 0 0 1 4.5 7H5Zm1.5 0h3V5a1.5 1.5 0 0 0-3 0v2Z",
  warning: "M8.9 2.5a1 1 0 0 0-1.8 0L1.6 12.6A1 1 0 0 0 2.5 14h11a1 1 0 0 0 .9-1.4L8.9 2.5ZM8 5.5a.75.75 0 0 1 .75.75v3a.75.75 0 0 1-1.5 0v-3A.75.75 0 0 1 8 5.5Zm0 7a.9.9 0 1 1 0-1.8.9.9 0 0 1 0 1.8Z",
  close: "M4.3 4.3a.75.75 0 0 1 1.06 0L8 6.94l2.64-2.64a.75.75 0 1 1 1.06 1.06L9.06 8l2.64 2.64a.75.75 0 1 1-1.06 1.06L8 9.06l-2.64 2.64a.75.75 0 0 1-1.06-1.06L6.94 8 4.3 5.36a.75.75 0 0 1 0-1.06Z",
  folder: "M1.5 4.5A1.5 1.5 0 0 1 3 3h3.1a1.5 1.5 0 0 1 1.06.44L8.2 4.5H13A1.5 1.5 0 0 1 14.5 6v6A1.5 1.5 0 0 1 13 13.5H3A1.5 1.5 0 0 1 1.5 12V4.5Z",
  chevron: "M6.2 4.2a.75.75 0 0 1 1.06 0l3.27 3.27a.75.75 0 0 1 0 1.06L7.26 11.8a.75.75 0 1 1-1.06-1.06L8.94 8 6.2 5.26a.75.75 0 0 1 0-1.06Z",
  spark: "M8 1.5l1.6 4.1 4.4.4-3.4 2.9 1 4.3L8 10.9l-3.6 2.3 1-4.3L2 6l4.4-.4L8 1.5Z",
  // Agent states: each its own shape, so a state reads without its colour.
  working: "M9.2 1.2 3 9h4.3l-.9 5.8L12.9 7H8.6l.6-5.8Z",
  "needs-approval": "M8 1 2.5 3.2v4.3c0 3.2 2.3 6 5.5 7.5 3.2-1.5 5.5-4.3 5.5-7.5V3.2L8 1Z",
  "needs-input": "M2.5 2.5h11A1.5 1.5 0 0 1 15 4v6.5a1.5 1.5 0 0 1-1.5 1.5H7.2L4 14.5V12H2.5A1.5 1.5 0 0 1 1 10.5V4a1.5 1.5 0 0 1 1.5-1.5Z",
  idle: "M4 3h2.5v10H4V3Zm5.5 0H12v10H9.5V3Z",
  error: "M5.3 1.5h5.4l3.8 3.8v5.4l-3.8 3.8H5.3l-3.8-3.8V5.3l3.8-3.8Z",
  "not-answering": "M3.5 1.5h9V3c0 2-1.4 3.6-2.9 5 1.5 1.4 2.9 3 2.9 5v1.5h-9V13c0-2 1.4-3.6 2.9-5C4.9 6.6 3.5 5 3.5 3V1.5Z",
  terminal: "M2.5 3A1.5 1.5 0 0 0 1 4.5v7A1.5 1.5 0 0 0 2.5 13h11a1.5 1.5 0 0 0 1.5-1.5v-7A1.5 1.5 0 0 0 13.5 3h-11Zm1.7 2.7a.75.75 0 0 1 1.05-.15l2.5 1.85a.75.75 0 0 1 0 1.2l-2.5 1.85a.75.75 0 1 1-.9-1.2L6.1 8 4.35 6.75a.75.75 0 0 1-.15-1.05ZM8 9.75h3.25a.75.75 0 0 1 0 1.5H8a.75.75 0 0 1 0-1.5Z",
} as const;

/** A named icon from the window's small set. */
export type IconName = keyof typeof ICONS;

/** A decorative 16x16 icon (hidden from assistive technology). */
export function icon(name: IconName, className = "icon"): SVGSVGElement {
  const svg = document.createElementNS(SVG_NS, "svg");
  svg.setAttribute("viewBox", "0 0 16 16");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  svg.setAttribute("class", className);
  const path = document.createElementNS(SVG_NS, "path");
  path.setAttribute("d", ICONS[name]);
  path.setAttribute("fill", "currentColor");
  svg.append(path);
  return svg;
}
