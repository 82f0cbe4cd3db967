// Entry point: picks the backend (Tauri IPC inside the app, the in-memory mock
// in a plain browser or with `?mock`) and mounts the window.
import "./styles.css";
import { mountApp } from "./app";
import { suppressBrowserContextMenu } from "./dom";
import { tauriBackend, wantsMock, type Backend } from "./backend";

async function pickBackend(): Promise<Backend> {
  if (!wantsMock()) return tauriBackend;
  // The mock and its fixtures load only when asked for, in their own chunk.
  const [{ mockBackend, NO_TRAY_HOST_NOTICE }, { scenario }] = await Promise.all([import("./mock-backend"), import("./fixtures")]);
  const params = new URLSearchParams(window.location.search);
  const mock = mockBackend(scenario(params.get("mock")), {
    latencyMs: Number(params.get("latency") ?? 600),
    approvalMs: Number(params.get("approval") ?? 4000),
    // `?mock&notray`: the desktop has no tray host, as the core would say.
    desktopNotice: params.has("notray") ? NO_TRAY_HOST_NOTICE : null,
  });
  // Browser tests drive the mock (emit snapshots, read calls) through this handle.
  (window as unknown as { __supercodeMock: unknown }).__supercodeMock = mock;
  return mock;
}

suppressBrowserContextMenu(document);
const root = document.getElementById("app");
if (root) {
  void pickBackend().then((backend) => mountApp(root, backend));
}
