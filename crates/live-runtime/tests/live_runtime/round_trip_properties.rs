//! Property tests of the write-then-read round trip: for arbitrary runtime ids, sources and
//! metadata (unicode, control characters, quotes, empty strings, odd paths), register → list →
//! resolve gives back exactly what was registered, and drop leaves nothing behind. Inputs the
//! format cannot carry are refused at registration and leave nothing behind either.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use live_runtime::{
    list_live_runtimes, read_receipt, register_live_runtime_with_metadata, resolve_live_runtime,
    LiveRuntimeMetadata, LiveRuntimeReceiptError, LiveRuntimeSource, LiveRuntimeStatus,
    LiveRuntimeSupervisor, ReceiptScan, Sensitive,
};
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;

use crate::common::{entries, file_store_scratch, loopback};

/// Cases per property: each case registers in a fresh temp directory (two fsyncs), so a few
/// hundred keep the module within seconds while still covering many shapes.
const CASES: u32 = 256;

/// Any text, biased towards the characters that break naive writers and readers.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[ -~]{0,24}",
        "[\\u{0}-\\u{1f}\"\\\\/ ]{0,8}",
        "\\PC{0,16}",
        Just(String::new()),
        Just("\u{feff}\u{202e}emoji 🦀 ünïcödé 日本語".to_string()),
    ]
}

/// A UTF-8 path, absolute or relative, possibly with `..`, spaces, unicode or trailing slashes.
fn path() -> impl Strategy<Value = PathBuf> {
    prop_oneof![
        vec(text(), 0..4).prop_map(|parts| PathBuf::from(format!("/{}", parts.join("/")))),
        text().prop_map(PathBuf::from),
        Just(PathBuf::from("../../etc/passwd")),
    ]
}

fn supervisor() -> impl Strategy<Value = LiveRuntimeSupervisor> {
    prop_oneof![
        Just(LiveRuntimeSupervisor::Manual),
        (vec(text(), 0..4), path(), btree_map(text(), text(), 0..3)).prop_map(
            |(argv, cwd, env): (Vec<String>, PathBuf, BTreeMap<String, String>)| {
                LiveRuntimeSupervisor::LaunchCommand { argv, cwd, env }
            }
        ),
    ]
}

prop_compose! {
    fn metadata()(
        runtime_kind in text(),
        display_name in option::of(text()),
        profile in option::of(text()),
        agent_name in option::of(text()),
        cwd in option::of(path()),
        workspace_roots in vec(path(), 0..3),
        canon_runtime_id in option::of(text()),
        supervisor in supervisor(),
    ) -> LiveRuntimeMetadata {
        LiveRuntimeMetadata {
            runtime_kind,
            display_name,
            profile,
            agent_name,
            cwd,
            workspace_roots,
            canon_runtime_id,
            supervisor,
        }
    }
}

fn source() -> impl Strategy<Value = LiveRuntimeSource> {
    (text(), path()).prop_map(|(session_id, workspace)| LiveRuntimeSource {
        session_id,
        workspace,
    })
}

/// A runtime id that registration accepts (not blank).
fn runtime_id() -> impl Strategy<Value = String> {
    text().prop_filter("blank runtime ids are refused", |s| !s.trim().is_empty())
}

/// A token: any non-empty text.
fn token_text() -> impl Strategy<Value = String> {
    text().prop_filter("empty tokens are refused", |s| !s.is_empty())
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        // Failures are reported with the shrunk input; nothing is written into the source tree.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn register_list_read_resolve_return_exactly_what_was_registered(
        runtime_id in runtime_id(),
        source in source(),
        metadata in metadata(),
        token_value in token_text(),
        port in 1u16..,
        v6 in any::<bool>(),
    ) {
        let scratch = file_store_scratch();
        let dir = &scratch.dir;
        let address = if v6 {
            std::net::SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port))
        } else {
            loopback(port)
        };
        let registration = register_live_runtime_with_metadata(
            dir,
            &runtime_id,
            source.clone(),
            address,
            Sensitive::new(token_value.clone()),
            metadata.clone(),
        )
        .unwrap();
        let endpoint = registration.endpoint().clone();

        let list = list_live_runtimes(dir).unwrap();
        prop_assert!(list.ignored.is_empty(), "{:?}", list.ignored);
        prop_assert_eq!(list.runtimes.len(), 1);
        let record = &list.runtimes[0];
        prop_assert_eq!(&record.endpoint, &endpoint);
        prop_assert_eq!(&record.runtime_id, &runtime_id);
        prop_assert_eq!(&record.source, &source);
        prop_assert_eq!(&record.metadata, &metadata);
        prop_assert_eq!(&record.status, &LiveRuntimeStatus::Running);
        prop_assert_eq!(record.pid, std::process::id());

        match read_receipt(dir, &format!("{endpoint}.json")).unwrap() {
            ReceiptScan::Listed(one) => {
                prop_assert_eq!(&one.metadata, &metadata);
                prop_assert_eq!(&one.source, &source);
            }
            other => prop_assert!(false, "read_receipt gave {:?}", other),
        }

        let resolved = resolve_live_runtime(dir, &endpoint, &source).unwrap();
        prop_assert_eq!(resolved.token.expose(), &token_value);
        prop_assert_eq!(*resolved.address.expose(), address);
        prop_assert_eq!(&resolved.record.metadata, &metadata);

        drop(registration);
        prop_assert!(list_live_runtimes(dir).unwrap().runtimes.is_empty());
        prop_assert_eq!(entries(dir.path()), Vec::<String>::new());
        prop_assert_eq!(entries(&scratch.secrets_path), Vec::<String>::new());
    }

    #[test]
    fn blank_runtime_ids_are_refused_and_leave_nothing_behind(
        blank in "[ \\t\\n\\r\\u{a0}\\u{2003}\\u{3000}]{0,6}",
    ) {
        let scratch = file_store_scratch();
        let err = register_live_runtime_with_metadata(
            &scratch.dir,
            &blank,
            crate::common::source("s"),
            loopback(1),
            Sensitive::new("t".into()),
            LiveRuntimeMetadata::default(),
        )
        .unwrap_err();
        prop_assert!(matches!(err, LiveRuntimeReceiptError::Invalid { .. }), "{:?}", err);
        prop_assert_eq!(entries(scratch.dir.path()), Vec::<String>::new());
        prop_assert_eq!(entries(&scratch.secrets_path), Vec::<String>::new());
    }

    #[test]
    fn non_utf8_paths_are_refused_at_registration_and_leave_nothing_behind(
        prefix in vec(any::<u8>(), 0..8),
        suffix in vec(any::<u8>(), 0..8),
    ) {
        // 0xff never appears in UTF-8, so this path cannot be written as a JSON string.
        let mut raw = prefix;
        raw.push(0xff);
        raw.extend(suffix);
        let workspace = PathBuf::from(OsString::from_vec(raw));
        let scratch = file_store_scratch();
        let err = register_live_runtime_with_metadata(
            &scratch.dir,
            "rt",
            LiveRuntimeSource { session_id: "s".into(), workspace },
            loopback(1),
            Sensitive::new("t".into()),
            LiveRuntimeMetadata::default(),
        )
        .unwrap_err();
        prop_assert!(matches!(err, LiveRuntimeReceiptError::Invalid { .. }), "{:?}", err);
        prop_assert!(entries(scratch.dir.path()).iter().all(|n| !n.ends_with(".json")));
        prop_assert_eq!(entries(&scratch.secrets_path), Vec::<String>::new());
    }
}
