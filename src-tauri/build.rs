//! Build script: generates the Tauri context and the app manifest that puts the app's own
//! commands under the capability ACL (see `capabilities/main-window.json`).

/// Every command the app exposes to its window; each needs an `allow-*` in a capability.
const COMMANDS: &[&str] = &[
    "snapshot",
    "attach",
    "forget",
    "dismiss",
    "revive_plan",
    "revive",
    "act",
    "approve",
    "reject",
    "open_logs",
    "desktop_notice",
    "coding_agents",
    "hooks_plan",
    "hooks_change",
];

fn main() {
    let dist = std::path::Path::new("ui/dist/index.html");
    if !dist.exists() {
        println!(
            "cargo:warning=ui/dist is missing: run `npm --prefix ui ci && npm --prefix ui run build` first (scripts/test.sh and scripts/run.sh do)"
        );
    }
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)),
    )
    .expect("failed to run tauri-build");
}
