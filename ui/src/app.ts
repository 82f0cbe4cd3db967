// The tray window: header with the secret store in use, the runtime list,
// pending Canon registrations, the coding agents to connect (views/agents-section.ts),
// ignored files, a first-run explanation and the footer. It renders every
// snapshot by patching keyed views, so a live update never steals focus,
// scroll position or an open confirmation.
import type { Backend } from "./backend";
import { CONFIRM_ACT_ACTION_PARAM, CONFIRM_ACT_PARAM, CONFIRM_REVIVE_PARAM, toCommandError, type ActRequest } from "./backend";
import type { FileWarning, IgnoredFile, PendingView, RuntimeView, Snapshot } from "./bindings";
import { h, icon, KeyedList, setAttr, setText, show, Slot } from "./dom";
import { AgentsSection } from "./views/agents-section";
import { PendingRow } from "./views/pending-row";
import { NOTICE_TIMEOUT_MS, RuntimeRow } from "./views/runtime-row";

/**
 * How often relative times ("since 5 min ago") are re-rendered. The coarsest
 * unit shown is minutes, so 30 s keeps them at most half a minute behind
 * without waking the window more than needed.
 */
export const RELATIVE_TIME_REFRESH_MS = 30_000;
/**
 * How long a confirmation asked for from the tray menu or a notification waits for the list to
 * show the state it is about (a snapshot follows the core's change within tens of milliseconds;
 * this leaves a loaded machine its slack).
 */
export const ACT_REQUEST_WAIT_MS = 3_000;

/** Options for tests: a fixed clock. */
export interface AppOptions {
  now?: () => Date;
}

/** A mounted window; `destroy` unsubscribes and stops timers. */
export interface MountedApp {
  /** Resolves once the first snapshot has been rendered (or failed to load). */
  ready: Promise<void>;
  /** Renders `s` as if it had arrived from the backend. */
  render(s: Snapshot): void;
  /** Re-renders relative times now. */
  tick(): void;
  destroy(): void;
}

/** Mounts the window into `root` and starts listening to `backend`. */
export function mountApp(root: HTMLElement, backend: Backend, options: AppOptions = {}): MountedApp {
  const now = options.now ?? (() => new Date());
  let destroyed = false;
  let snapshot: Snapshot | null = null;
  /** An action's confirmation asked for before this list showed the state it is about. */
  let waitingAct: { request: ActRequest; timer: number } | null = null;

  // ---- header ----
  const storeText = h("span", { class: "store-text" });
  const storeIcon = h("span", { class: "store-icon" });
  const storeTag = h("span", { class: "store-tag", text: "Plaintext · opt-in" });
  // Hidden until a snapshot says the store is the plaintext file: never flash it while loading.
  storeTag.hidden = true;
  const store = h("p", { class: "secret-store", attrs: { "data-testid": "secret-store" } }, storeIcon, storeText, storeTag);
  const summary = h("p", { class: "summary", attrs: { "aria-live": "polite" } });
  const header = h(
    "header",
    { class: "app-header" },
    h("div", { class: "brand" }, h("span", { class: "app-mark", attrs: { "aria-hidden": "true" } }, icon("spark", "mark-icon")), h("div", { class: "brand-text" }, h("h1", { class: "app-name", text: "Supercode Tray" }), store)),
    summary,
  );

  // ---- global message (load failures, open logs) ----
  const bannerText = h("span", { class: "msg-text" });
  const retry = h("button", { class: "btn btn-secondary btn-small", text: "Retry", attrs: { type: "button" }, on: { click: () => void load() } });
  const bannerDismiss = h("button", { class: "icon-btn", attrs: { type: "button", "aria-label": "Dismiss error" }, on: { click: () => setBanner(null) } }, icon("close"));
  const banner = new Slot(h("div", { class: "msg msg-error banner", attrs: { role: "alert", "data-testid": "app-error" } }, icon("warning", "icon msg-icon"), bannerText, retry, bannerDismiss));
  let bannerRetry = false;
  function setBanner(message: string | null, canRetry = false): void {
    bannerRetry = canRetry;
    setText(bannerText, message ?? "");
    show(retry, bannerRetry);
    banner.set(message !== null);
  }

  // ---- global notice (an action's outcome whose row has gone) ----
  const noticeText = h("span", { class: "msg-text" });
  const noticeDismiss = h("button", { class: "icon-btn", attrs: { type: "button", "aria-label": "Dismiss message" }, on: { click: () => setNotice(null) } }, icon("close"));
  const notice = new Slot(h("div", { class: "msg msg-info banner", attrs: { role: "status", "data-testid": "app-notice" } }, noticeText, noticeDismiss));
  let noticeTimer: number | undefined;
  // An outcome, said once: it goes by itself (`NOTICE_TIMEOUT_MS`) or when dismissed.
  function setNotice(message: string | null): void {
    window.clearTimeout(noticeTimer);
    if (message === null && notice.el.contains(document.activeElement)) settleFocus();
    setText(noticeText, message ?? "");
    notice.set(message !== null);
    if (message !== null) noticeTimer = window.setTimeout(() => setNotice(null), NOTICE_TIMEOUT_MS);
  }

  // ---- loading ----
  const loading = h("p", { class: "loading", attrs: { role: "status" } }, h("span", { class: "spinner", attrs: { "aria-hidden": "true" } }), "Loading runtimes…");

  // ---- first run / empty ----
  const emptyTitle = h("h2", { class: "empty-title" });
  const receiptDirEl = h("code", { class: "path" });
  const empty = new Slot(h(
    "section",
    { class: "empty", attrs: { "data-testid": "empty-state", "aria-labelledby": "empty-title" } },
    h("span", { class: "empty-mark", attrs: { "aria-hidden": "true" } }, icon("terminal", "empty-icon")),
    emptyTitle,
    h("p", {}, "A runtime is a local AI coding-agent process. When it starts, it registers itself by leaving a small receipt file, and shows up here."),
    h("p", {}, "Runtimes built with the live-runtime library or ", h("code", { text: "@canonmsg/core" }), " register automatically. Receipts are read from ", receiptDirEl, "."),
    h("p", { class: "try-label", text: "Try it with a demo runtime:" }),
    h("pre", { class: "command" }, h("code", { text: "supercode-tray demo-runtime --name demo" })),
  ));
  emptyTitle.id = "empty-title";

  // ---- runtimes ----
  const runtimesHeading = h("h2", { class: "section-title", text: "Runtimes", attrs: { tabindex: "-1", id: "runtimes-title" } });
  const runtimesCount = h("span", { class: "count" });
  const runtimesList = h("ul", { class: "rows", attrs: { role: "list" } });
  const runtimesSection = h("section", { class: "section", attrs: { "aria-labelledby": "runtimes-title" } }, h("div", { class: "section-head" }, runtimesHeading, runtimesCount), runtimesList);
  runtimesSection.hidden = true;
  // Where focus goes when the element that had it went with a state (an approved request's
  // button): the list's heading, which no update moves, without scrolling to it, so the list
  // stays where the user was looking (issue 31).
  function settleFocus(): void {
    (runtimesSection.hidden ? logsButton : runtimesHeading).focus({ preventScroll: true });
  }

  // The backend's snapshots have one source, its watcher, and come as events in the order it
  // read them. A fetch's answer has no place in that order: an event that arrives while the fetch
  // is in flight may be newer than the answer, or older, but then the answer itself is still to
  // come as an event (the backend keeps what its watcher read before it sends it). So an answer
  // is shown only if no event arrived meanwhile; otherwise it could put the window in the past
  // until the next change.
  let events = 0;
  const fetchSnapshot = async (): Promise<Snapshot | null> => {
    const seen = events;
    const s = await backend.snapshot();
    return events === seen ? s : null;
  };
  const refresh = async () => {
    try {
      const s = await fetchSnapshot();
      if (s) apply(s);
    } catch {
      // A failed refresh after an action is not worth a banner: the event stream keeps the list current.
    }
  };
  // A runtime revived from the catalog comes back under a new id (its new receipt), so its old
  // row, which shows the outcome, goes once the backend has read that receipt: the outcome is
  // then said at the top. Kept a minute at most, so a row that goes much later for another
  // reason is not announced as revived.
  const announceWhenGone = new Map<string, { message: string; until: number }>();
  const ANNOUNCE_WITHIN_MS = 60_000;
  // What a failed action's code asks of the window. `notFound` and `refused` mean the list it
  // acted on was out of date: refresh it. A thing not found is gone, and its row with it, so
  // its message is also said at the top. Every failure still reaches the row as its error.
  const failed = (e: unknown): Promise<never> => {
    const error = toCommandError(e);
    if (error.code === "notFound" || error.code === "refused") {
      void refresh().then(() => {
        if (error.code === "notFound") setNotice(error.message);
      });
    }
    return Promise.reject(error);
  };
  const runtimeRows = new KeyedList<RuntimeView, RuntimeRow>(
    runtimesList,
    (r) => r.id,
    (r) =>
      new RuntimeRow(r, {
        attach: (id) => backend.attach(id).catch(failed),
        forget: (id) =>
          backend.forget(id).then(
            () => void refresh(),
            failed,
          ),
        dismiss: (id) =>
          backend.dismiss(id).then(
            () => void refresh(),
            failed,
          ),
        revivePlan: (id) => backend.revivePlan(id).catch(failed),
        revive: (id, planDigest, allowEnv) =>
          backend.revive(id, planDigest, allowEnv).then(
            (outcome) => {
              announceWhenGone.set(id, { message: outcome.message, until: now().getTime() + ANNOUNCE_WITHIN_MS });
              void refresh();
              return outcome;
            },
            failed,
          ),
        act: (id, action, revision) => backend.act(id, action, revision).catch((e: unknown) => Promise.reject(toCommandError(e))),
        settleFocus,
        now,
      }),
  );

  // ---- pending registrations ----
  const pendingHeading = h("h2", { class: "section-title", text: "Registration requests", attrs: { tabindex: "-1", id: "pending-title" } });
  const pendingCount = h("span", { class: "count" });
  const pendingList = h("ul", { class: "rows", attrs: { role: "list" } });
  const pendingSection = h("section", { class: "section", attrs: { "aria-labelledby": "pending-title" } }, h("div", { class: "section-head" }, pendingHeading, pendingCount), pendingList);
  pendingSection.hidden = true;
  const pendingRows = new KeyedList<PendingView, PendingRow>(
    pendingList,
    (p) => p.profile,
    (p) =>
      new PendingRow(p, {
        approve: (profile) => backend.approve(profile).catch(failed),
        reject: (profile) =>
          backend.reject(profile).then(
            () => void refresh(),
            failed,
          ),
        now,
      }),
  );

  // ---- ignored files, and files used with a warning ----
  const ignored = fileList(
    "Ignored files",
    "These files were skipped because they cannot be trusted or read. The rest keeps working.",
    "ignored-row",
  );
  const warnings = fileList(
    "Files to check",
    "These files were used, but other users can read them. Run chmod 600 on each.",
    "warning-row",
  );

  // ---- coding agents (their state is read from their settings files, not the snapshot) ----
  const agents = new AgentsSection(backend);

  // ---- footer ----
  const logsButton = h(
    "button",
    {
      class: "btn btn-ghost",
      attrs: { type: "button", "data-testid": "open-logs" },
      on: {
        click: () => {
          if (logsButton.getAttribute("aria-busy") === "true") return;
          setAttr(logsButton, "aria-busy", "true");
          backend
            .openLogs()
            .then(
              () => setBanner(null),
              (e: unknown) => setBanner(toCommandError(e).message),
            )
            .finally(() => setAttr(logsButton, "aria-busy", null));
        },
      },
    },
    icon("folder"),
    h("span", { text: "Open logs folder" }),
  );
  const footer = h("footer", { class: "app-footer" }, logsButton);

  // ---- desktop notice (no tray host: the window is the only way in), worded by the core ----
  const desktopTitle = h("strong", { class: "msg-title", attrs: { "data-testid": "desktop-notice-title" } });
  const desktopDetail = h("span", { class: "msg-detail", attrs: { "data-testid": "desktop-notice-detail" } });
  const desktop = new Slot(h("div", { class: "msg msg-warning banner", attrs: { role: "note", "data-testid": "desktop-notice" } }, icon("warning", "icon msg-icon"), h("span", { class: "msg-text" }, desktopTitle, " ", desktopDetail)));
  backend.desktopNotice().then(
    (n) => {
      if (destroyed || n === null) return;
      setText(desktopTitle, `${n.title}.`);
      setText(desktopDetail, n.detail);
      desktop.set(true);
    },
    // The notice only helps; a failure to ask is not worth an error.
    () => undefined,
  );

  const main = h("main", { class: "app-main" }, banner.anchor, desktop.anchor, notice.anchor, loading, empty.anchor, runtimesSection, pendingSection, agents.element, ignored.element, warnings.element);
  root.replaceChildren(header, main, footer);
  root.classList.add("app");

  function renderSummary(s: Snapshot): void {
    // The core counts; the window only words it.
    const { running, stale, exited, awaitingApproval, needsYou } = s.counts;
    const parts = [s.runtimes.length === 0 ? "No runtimes" : `${running} running`];
    if (needsYou > 0) parts.push(`${needsYou} ${needsYou === 1 ? "needs" : "need"} you`);
    if (stale > 0) parts.push(`${stale} stale`);
    if (exited > 0) parts.push(`${exited} exited`);
    if (awaitingApproval > 0) parts.push(`${awaitingApproval} awaiting approval`);
    setText(summary, parts.join(" · "));
  }

  function apply(s: Snapshot): void {
    if (destroyed) return;
    snapshot = s;
    show(loading, false);
    if (bannerRetry) setBanner(null);

    const file = s.secretStore.kind === "file";
    store.classList.toggle("is-file", file);
    storeIcon.replaceChildren(icon(file ? "warning" : "lock"));
    setText(storeText, `Secrets: ${s.secretStore.description}`);
    show(storeTag, file);
    setAttr(store, "title", file ? `${s.secretStore.description}: a plaintext file you opted into, not the OS keychain.` : s.secretStore.description);
    renderSummary(s);

    const isEmpty = s.runtimes.length === 0;
    empty.set(s.firstRun || isEmpty);
    setText(emptyTitle, isEmpty ? "No runtimes yet" : "Welcome to Supercode Tray");
    setText(receiptDirEl, s.receiptDir);

    // An update keeps the list where the user was looking: a card that moved (re-sorted after an
    // approval) or changed size does not scroll the others away (issue 31). `.app-main` has
    // `overflow-anchor: none`, so no engine moves it either.
    const scrollTop = main.scrollTop;
    show(runtimesSection, !isEmpty);
    setText(runtimesCount, String(s.runtimes.length));
    const lostRuntimeFocus = runtimeRows.reconcile(s.runtimes);
    for (const [id, { message, until }] of announceWhenGone) {
      if (runtimeRows.get(id) && now().getTime() <= until) continue;
      if (!runtimeRows.get(id)) setNotice(message);
      announceWhenGone.delete(id);
    }

    show(pendingSection, s.pending.length > 0);
    setText(pendingCount, String(s.pending.length));
    const lostPendingFocus = pendingRows.reconcile(s.pending);

    ignored.render(s.ignored);
    warnings.render(s.warnings);

    // A row that held focus went away (forgotten, dismissed): land on its section, not on <body>.
    if (lostRuntimeFocus) (isEmpty ? logsButton : runtimesHeading).focus({ preventScroll: true });
    else if (lostPendingFocus) (s.pending.length > 0 ? pendingHeading : logsButton).focus({ preventScroll: true });
    if (main.scrollTop !== scrollTop) main.scrollTop = scrollTop;
    if (waitingAct && runtimeRows.get(waitingAct.request.id)?.requestAct(waitingAct.request.action)) {
      window.clearTimeout(waitingAct.timer);
      waitingAct = null;
    }
  }

  function tick(): void {
    const t = now();
    for (const row of runtimeRows.all()) row.refreshTime(t);
    for (const row of pendingRows.all()) row.refreshTime(t);
  }

  // Subscribe before the first fetch so no change between the two is missed.
  let unlisten: (() => void) | null = null;
  const subscribed = backend
    .onSnapshot((s) => {
      events += 1;
      apply(s);
    })
    .then(
      (stop) => {
        if (destroyed) stop();
        else unlisten = stop;
      },
      () => setBanner("Live updates are unavailable; the list may be out of date. Reopen the window to refresh."),
    );

  async function load(): Promise<void> {
    try {
      const s = await fetchSnapshot();
      if (s) apply(s);
    } catch (e) {
      show(loading, false);
      setBanner(`Could not load runtimes: ${toCommandError(e).message}`, true);
    }
  }

  // Escape inside a row is handled by the row (focus goes back to its button);
  // this catches Escape pressed anywhere else while a confirmation is open.
  const onKeydown = (e: KeyboardEvent) => {
    if (e.key !== "Escape" || e.defaultPrevented) return;
    let closed = false;
    for (const row of runtimeRows.all()) closed = row.dismissConfirm() || closed;
    closed = agents.dismissConfirm() || closed;
    if (closed) e.preventDefault();
  };
  document.addEventListener("keydown", onKeydown);

  const timer = window.setInterval(tick, RELATIVE_TIME_REFRESH_MS);
  // The window is hidden, not closed, between tray clicks: refresh when it comes back.
  const onVisible = () => {
    if (document.visibilityState === "visible" && snapshot !== null) {
      void refresh();
      void agents.load();
    }
  };
  document.addEventListener("visibilitychange", onVisible);

  // The tray menu's "Revive …" opens the window on that runtime's confirmation: by query parameter
  // when it creates the window, by event when the window is already open.
  function confirmRevive(id: string): void {
    const row = runtimeRows.get(id);
    if (!row?.requestRevive()) setBanner("That runtime cannot be revived now; see its row for why.");
  }
  let stopReviveRequests: (() => void) | null = null;
  void backend.onConfirmRevive(confirmRevive).then((stop) => {
    if (destroyed) stop();
    else stopReviveRequests = stop;
  });
  // The tray menu's and a notification's actions that ask first are asked here the same way. A
  // notification goes out as the core sees the state, and this list follows with the next
  // snapshot, so a request the list cannot place yet waits for the snapshots of the next
  // ACT_REQUEST_WAIT_MS before it is told as no longer offered.
  function confirmAct(request: ActRequest): void {
    window.clearTimeout(waitingAct?.timer);
    waitingAct = null;
    if (runtimeRows.get(request.id)?.requestAct(request.action)) return;
    const timer = window.setTimeout(() => {
      waitingAct = null;
      setBanner("That action is no longer offered; see the runtime's row for what its agent is doing now.");
    }, ACT_REQUEST_WAIT_MS);
    waitingAct = { request, timer };
  }
  let stopActRequests: (() => void) | null = null;
  void backend.onConfirmAct(confirmAct).then((stop) => {
    if (destroyed) stop();
    else stopActRequests = stop;
  });
  const params = new URLSearchParams(window.location.search);
  const requested = params.get(CONFIRM_REVIVE_PARAM);
  const requestedAct = params.get(CONFIRM_ACT_PARAM);
  const requestedAction = params.get(CONFIRM_ACT_ACTION_PARAM);

  const ready = Promise.all([subscribed.then(load), agents.load()]).then(() => {
    if (requested) confirmRevive(requested);
    if (requestedAct && requestedAction) confirmAct({ id: requestedAct, action: requestedAction });
  });

  return {
    ready,
    render: apply,
    tick,
    destroy() {
      destroyed = true;
      window.clearInterval(timer);
      window.clearTimeout(noticeTimer);
      window.clearTimeout(waitingAct?.timer);
      document.removeEventListener("visibilitychange", onVisible);
      document.removeEventListener("keydown", onKeydown);
      unlisten?.();
      stopReviveRequests?.();
      stopActRequests?.();
    },
  };
}

/**
 * A collapsed list of files with a reason each (ignored ones, or ones used with a warning),
 * hidden while empty. Reasons are text, never markup.
 */
function fileList(title: string, help: string, rowTestId: string) {
  const count = h("span", { class: "count" });
  const list = h("ul", { class: "ignored-list", attrs: { role: "list" } });
  const element = h(
    "details",
    { class: "ignored", attrs: { "data-testid": `${rowTestId}s` } },
    h("summary", {}, icon("chevron", "icon chevron"), h("span", { class: "summary-text", text: title }), count),
    h("p", { class: "ignored-help", text: help }),
    list,
  );
  element.hidden = true;
  function render(files: readonly (IgnoredFile | FileWarning)[]): void {
    show(element, files.length > 0);
    setText(count, String(files.length));
    const key = JSON.stringify(files.map((f) => [f.location, f.file, f.reason]));
    if (list.dataset.key === key) return;
    list.dataset.key = key;
    list.replaceChildren(
      ...files.map((f) =>
        h(
          "li",
          { class: "ignored-row", attrs: { "data-testid": rowTestId } },
          h("span", { class: "ignored-file" }, h("span", { class: "ignored-loc", text: f.location === "canon" ? "canon" : "receipts" }), h("code", { text: f.file, attrs: { title: f.file } })),
          h("span", { class: "ignored-reason", text: f.reason }),
        ),
      ),
    );
  }
  return { element, render };
}
