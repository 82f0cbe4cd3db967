//! Issue 6: a receipt cache kept current one file at a time ([`ReceiptFiles::refresh`], then
//! [`ReceiptFiles::reconcile`], what the tray's watcher does per file event or process exit)
//! lists exactly what a full rescan lists,
//! after any sequence of writes, rewrites, removals, hostile files, mode changes, temp files and
//! process deaths. Real files in a real directory, real `sleep` processes killed for real.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;

use live_runtime::test_support::{remove_any, HostileReceipt};
use live_runtime::{
    list_live_runtimes, LiveRuntimeEndpoint, ProcessIdentity, ReceiptDir, ReceiptFiles, ReceiptScan,
};
use proptest::prelude::*;
use serde_json::{json, Value};

use crate::common::{
    file_store_scratch, foreign_receipt, make_receipt_dir, source, write_file, ChildGuard,
};

/// Receipt names a case's operations land on: few, so they overwrite each other's files.
const SLOTS: usize = 5;
/// `sleep` processes per case that receipts point at and that may be killed.
const PROCESSES: usize = 3;
/// Each case spawns its processes and does up to 16 file operations: cheap enough for many.
const CASES: u32 = 64;

/// Registration times that sort differently as text and as instants (`.5Z` is after `Z`), and an
/// offset that is normalised to UTC.
const REGISTERED_AT: [&str; 4] = [
    "2026-01-02T03:04:05Z",
    "2026-01-02T03:04:05.5Z",
    "2026-01-02T05:04:05+02:00",
    "2025-12-31T23:59:59.999Z",
];

#[derive(Clone, Debug)]
enum Op {
    /// A valid receipt in `slot` for process `process` (or rewritten over what is there).
    Write {
        slot: usize,
        process: usize,
        at: usize,
    },
    /// A receipt whose pid is `process` but whose start time is not: a reused pid (stale).
    Stale {
        slot: usize,
        process: usize,
    },
    Remove {
        slot: usize,
    },
    Hostile {
        slot: usize,
        kind: HostileReceipt,
    },
    /// Mode 0644 (refused) or back to 0600, on a regular file only.
    Chmod {
        slot: usize,
        private: bool,
    },
    /// A writer's temp file next to the receipts, holding a valid receipt: never read as one.
    Temp {
        slot: usize,
        process: usize,
    },
    Kill {
        process: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let slot = 0..SLOTS;
    let process = 0..PROCESSES;
    prop_oneof![
        4 => (slot.clone(), process.clone(), 0..REGISTERED_AT.len())
            .prop_map(|(slot, process, at)| Op::Write { slot, process, at }),
        1 => (slot.clone(), process.clone()).prop_map(|(slot, process)| Op::Stale { slot, process }),
        2 => slot.clone().prop_map(|slot| Op::Remove { slot }),
        2 => (slot.clone(), proptest::sample::select(&HostileReceipt::ALL[..]))
            .prop_map(|(slot, kind)| Op::Hostile { slot, kind }),
        1 => (slot.clone(), any::<bool>()).prop_map(|(slot, private)| Op::Chmod { slot, private }),
        1 => (slot, process.clone()).prop_map(|(slot, process)| Op::Temp { slot, process }),
        2 => process.prop_map(|process| Op::Kill { process }),
    ]
}

struct Case {
    dir: ReceiptDir,
    outside: tempfile::TempDir,
    endpoints: Vec<LiveRuntimeEndpoint>,
    processes: Vec<ChildGuard>,
    identities: Vec<ProcessIdentity>,
    files: ReceiptFiles,
}

impl Case {
    fn name(&self, slot: usize) -> String {
        format!("{}.json", self.endpoints[slot])
    }

    fn receipt(&self, slot: usize, process: usize, start_time: u64, at: &str) -> Value {
        let id = self.identities[process];
        let mut receipt = foreign_receipt(
            &self.endpoints[slot],
            &format!("rt-{process}"),
            &source(&format!("session-{slot}")),
            id.pid,
            Some(start_time),
            "127.0.0.1:40400",
            None,
        );
        receipt["registeredAt"] = json!(at);
        receipt
    }

    /// Writes `bytes` as the file in `slot` (replacing whatever is there: file, link or directory).
    fn put(&self, slot: usize, bytes: &[u8], mode: u32) {
        remove_any(&self.dir.path().join(self.name(slot)));
        write_file(self.dir.path(), &self.name(slot), bytes, mode);
    }

    /// Applies `op` to the directory and returns the names a watcher would be told to re-read.
    fn apply(&mut self, op: &Op) -> BTreeSet<String> {
        let mut changed = BTreeSet::new();
        match *op {
            Op::Write { slot, process, at } => {
                let receipt = self.receipt(
                    slot,
                    process,
                    self.identities[process].start_time,
                    REGISTERED_AT[at],
                );
                self.put(slot, &pretty(&receipt), 0o600);
                changed.insert(self.name(slot));
            }
            Op::Stale { slot, process } => {
                let start = self.identities[process].start_time + 1;
                let receipt = self.receipt(slot, process, start, REGISTERED_AT[0]);
                self.put(slot, &pretty(&receipt), 0o600);
                changed.insert(self.name(slot));
            }
            Op::Remove { slot } => {
                remove_any(&self.dir.path().join(self.name(slot)));
                changed.insert(self.name(slot));
            }
            Op::Hostile { slot, kind } => {
                let valid = self.receipt(slot, 0, self.identities[0].start_time, REGISTERED_AT[0]);
                let other = self.receipt(
                    (slot + 1) % SLOTS,
                    0,
                    self.identities[0].start_time,
                    REGISTERED_AT[0],
                );
                let path = self.dir.path().join(self.name(slot));
                kind.write(&path, &valid, &other, self.outside.path(), "real.json");
                changed.insert(self.name(slot));
            }
            Op::Chmod { slot, private } => {
                let path = self.dir.path().join(self.name(slot));
                // A symlink's mode is its target's business; only regular files are changed.
                if fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
                    let mode = if private { 0o600 } else { 0o644 };
                    fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
                    changed.insert(self.name(slot));
                }
            }
            Op::Temp { slot, process } => {
                let receipt = self.receipt(
                    slot,
                    process,
                    self.identities[process].start_time,
                    REGISTERED_AT[0],
                );
                let temp = format!(".{}.0badc0de.{}.tmp", self.name(slot), std::process::id());
                write_file(self.dir.path(), &temp, &pretty(&receipt), 0o600);
                changed.insert(temp);
            }
            Op::Kill { process } => {
                // What the watcher re-reads on the pidfd cue: that pid's listed receipts.
                changed.extend(self.files.names_with_pid(self.identities[process].pid));
                self.processes[process].kill();
            }
        }
        changed
    }
}

fn pretty(value: &Value) -> Vec<u8> {
    serde_json::to_vec_pretty(value).unwrap()
}

fn as_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn refreshing_the_changed_files_lists_exactly_what_a_full_rescan_lists(
        ops in proptest::collection::vec(op(), 1..16)
    ) {
        let scratch = file_store_scratch();
        make_receipt_dir(&scratch.dir);
        let processes: Vec<ChildGuard> = (0..PROCESSES).map(|_| ChildGuard::sleep()).collect();
        let identities = processes
            .iter()
            .map(|p| ProcessIdentity::of(p.pid()).unwrap())
            .collect();
        let mut case = Case {
            dir: scratch.dir.clone(),
            outside: tempfile::tempdir().unwrap(),
            endpoints: (0..SLOTS).map(|_| LiveRuntimeEndpoint::generate()).collect(),
            processes,
            identities,
            files: ReceiptFiles::scan(&scratch.dir).unwrap(),
        };

        for (step, op) in ops.iter().enumerate() {
            let killed = match op {
                Op::Kill { process } => {
                    case.files.names_with_pid(case.identities[*process].pid)
                }
                _ => Vec::new(),
            };
            let changed = case.apply(op);
            for name in &changed {
                let scan = case.files.refresh(&case.dir, name).unwrap();
                if name.starts_with('.') {
                    prop_assert!(matches!(scan, ReceiptScan::NotAReceipt), "{name}: {scan:?}");
                }
            }
            let exited: Vec<String> = case
                .files
                .reconcile(&case.dir)
                .iter()
                .map(|endpoint| format!("{endpoint}.json"))
                .collect();
            // The reconciliation that removes a dead process's receipt says so (the watcher tells
            // the death).
            for name in &killed {
                prop_assert!(exited.contains(name), "step {step} {op:?}: {name} not reported exited");
            }

            let incremental = case.files.list();
            let full = list_live_runtimes(&case.dir).unwrap();
            prop_assert!(
                full.exited.is_empty(),
                "step {step} {op:?}: the full rescan removed receipts the incremental one kept: {:?}",
                full.exited
            );
            prop_assert_eq!(
                as_json(&incremental),
                as_json(&full),
                "step {} {:?}",
                step,
                op
            );
            // Temp files are never listed or reported, and every refused file has a reason.
            prop_assert!(incremental.ignored.iter().all(|i| !i.file.starts_with('.') && !i.reason.is_empty()));
        }
    }
}
