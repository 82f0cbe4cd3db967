// KeyedList: the reconciliation every live update goes through.
import { describe, expect, it } from "vitest";
import { h, KeyedList, suppressBrowserContextMenu, type KeyedView } from "../src/dom";

type Item = { id: string, label: string };
class View implements KeyedView<Item> {
  readonly root = h("li", {}, h("button", { attrs: { type: "button" } }));
  updates = 0;
  update(item: Item): void {
    this.updates += 1;
    this.root.dataset.id = item.id;
    this.root.firstElementChild!.textContent = item.label;
  }
}

function setup() {
  document.body.replaceChildren();
  const ul = h("ul");
  document.body.append(ul);
  const created: string[] = [];
  const list = new KeyedList<Item, View>(ul, (i) => i.id, (i) => {
    created.push(i.id);
    return new View();
  });
  const order = () => [...ul.children].map((c) => (c as HTMLElement).dataset.id);
  return { ul, list, created, order };
}
const items = (...ids: string[]) => ids.map((id) => ({ id, label: `label ${id}` }));

// Deterministic shuffles so a failure reproduces.
function permutations(seed: number, ids: string[], count: number): string[][] {
  let x = seed;
  const rand = () => ((x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const out: string[][] = [];
  for (let n = 0; n < count; n++) {
    const a = ids.filter(() => rand() > 0.2);
    for (let i = a.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [a[i], a[j]] = [a[j]!, a[i]!];
    }
    out.push(a);
  }
  return out;
}

describe("KeyedList", () => {
  it("reuses a view per key and patches it instead of re-creating it", () => {
    const { list, created, order } = setup();
    list.reconcile(items("a", "b"));
    const a = list.get("a");
    list.reconcile([{ id: "a", label: "changed" }, { id: "b", label: "b" }]);
    expect(list.get("a")).toBe(a);
    expect(a?.root.textContent).toBe("changed");
    expect(created).toEqual(["a", "b"]);
    expect(order()).toEqual(["a", "b"]);
  });

  it("matches any new order and keeps the focused row focused through every reorder", () => {
    const { list, order } = setup();
    const ids = ["a", "b", "c", "d", "e", "f"];
    list.reconcile(items(...ids));
    for (const perm of permutations(7, ids, 200)) {
      // Focus a row that is on screen now and stays in the next order.
      const staying = perm.filter((id) => list.get(id) !== undefined);
      const withFocus = staying.length > 0 ? staying[Math.floor(staying.length / 2)]! : null;
      if (withFocus) list.get(withFocus)!.root.querySelector("button")!.focus();
      else (document.activeElement as HTMLElement | null)?.blur();
      const lost = list.reconcile(items(...perm));
      expect(order()).toEqual(perm);
      expect(lost).toBe(false);
      if (withFocus) expect(document.activeElement).toBe(list.get(withFocus)!.root.querySelector("button"));
    }
  });

  it("reports when the focused row was removed", () => {
    const { list } = setup();
    list.reconcile(items("a", "b"));
    list.get("b")!.root.querySelector("button")!.focus();
    expect(list.reconcile(items("a"))).toBe(true);
  });

  it("ignores a duplicate key instead of stealing the first row's node", () => {
    const { list, order } = setup();
    list.reconcile([{ id: "a", label: "first" }, { id: "a", label: "second" }, { id: "b", label: "b" }]);
    expect(order()).toEqual(["a", "b"]);
    expect(list.get("a")?.root.textContent).toBe("first");
  });

  it("does not touch rows that are already in place", () => {
    const { ul, list } = setup();
    list.reconcile(items("a", "b", "c"));
    const moved: Node[] = [];
    const observer = new MutationObserver((records) => records.forEach((r) => moved.push(...r.addedNodes)));
    observer.observe(ul, { childList: true });
    list.reconcile(items("a", "b", "c", "d"));
    list.reconcile(items("a", "c", "d"));
    return new Promise<void>((resolve) =>
      queueMicrotask(() => {
        observer.disconnect();
        expect(moved.map((n) => (n as HTMLElement).dataset.id)).toEqual(["d"]);
        resolve();
      }),
    );
  });
});

describe("suppressBrowserContextMenu", () => {
  // Installed once, as main.ts does; the other tests here do not right-click.
  suppressBrowserContextMenu(document);
  function rightClick(build: (doc: Document) => Element, select = false): boolean {
    const doc = document;
    doc.body.replaceChildren();
    doc.getSelection()?.removeAllRanges();
    const target = build(doc);
    doc.body.append(target);
    if (select) doc.getSelection()?.selectAllChildren(target);
    const event = new MouseEvent("contextmenu", { bubbles: true, cancelable: true, button: 2 });
    target.dispatchEvent(event);
    return event.defaultPrevented;
  }

  it("keeps the webview's menu off buttons, rows and empty space", () => {
    expect(rightClick((doc) => doc.createElement("button"))).toBe(true);
    const row = (doc: Document) => {
      const li = doc.createElement("li");
      li.textContent = "demo-alpha";
      return li;
    };
    expect(rightClick(row)).toBe(true);
    expect(rightClick((doc) => doc.createElement("input"))).toBe(false);
  });

  it("lets it open over selected text and in text fields, not on check boxes", () => {
    const text = (doc: Document) => {
      const p = doc.createElement("p");
      p.textContent = "cargo test --workspace";
      return p;
    };
    expect(rightClick(text, true)).toBe(false);
    expect(rightClick((doc) => doc.createElement("textarea"))).toBe(false);
    const box = (doc: Document) => {
      const input = doc.createElement("input");
      input.type = "checkbox";
      return input;
    };
    expect(rightClick(box)).toBe(true);
  });
});
