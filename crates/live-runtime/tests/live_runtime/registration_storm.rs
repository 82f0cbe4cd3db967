//! 200 registrations made and dropped at once from 200 threads while another thread keeps listing
//! and resolving: all 200 are listed together at the peak, none is lost or torn, and once they are
//! dropped no receipt, temp file or token is left.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use live_runtime::{list_live_runtimes, register_live_runtime, resolve_live_runtime};

use crate::common::{file_store_scratch, loopback, resolve_listed, source, token};

const REGISTRATIONS: usize = 200;
/// Generous bound for each phase on a shared 2-core CI machine (each phase takes well under a
/// second here): a thread that has not reached the barrier by then is stuck.
const PHASE_DEADLINE: Duration = Duration::from_secs(120);

#[test]
fn two_hundred_concurrent_registrations_are_all_listed_then_all_gone_with_no_stale_entry() {
    let scratch = file_store_scratch();
    let dir = scratch.dir.clone();
    // Phases: all registered (peak) -> checked -> all dropped. The parties are the registering
    // threads plus the one taking the peak list.
    let registered = Arc::new(Barrier::new(REGISTRATIONS + 1));
    let peak_checked = Arc::new(Barrier::new(REGISTRATIONS + 1));
    let done = Arc::new(AtomicBool::new(false));
    let resolves = Arc::new(AtomicUsize::new(0));

    // The lister runs through the whole storm, before, during and after the peak.
    let lister = {
        let (dir, done, resolves) = (dir.clone(), done.clone(), resolves.clone());
        std::thread::spawn(move || {
            let mut scans = 0usize;
            while !done.load(Ordering::SeqCst) {
                let list = list_live_runtimes(&dir).unwrap();
                assert!(list.ignored.is_empty(), "{:?}", list.ignored);
                assert!(list.runtimes.len() <= REGISTRATIONS);
                for record in list.runtimes.iter().take(20) {
                    if resolve_listed(&dir, record) {
                        resolves.fetch_add(1, Ordering::SeqCst);
                    }
                }
                scans += 1;
            }
            scans
        })
    };

    let workers: Vec<_> = (0..REGISTRATIONS)
        .map(|n| {
            let (dir, registered, peak_checked) =
                (dir.clone(), registered.clone(), peak_checked.clone());
            std::thread::spawn(move || {
                let runtime_id = format!("storm-{n}");
                let registration = register_live_runtime(
                    &dir,
                    &runtime_id,
                    source(&format!("storm-session-{n}")),
                    loopback(30_000 + n as u16),
                    token(&format!("token-{runtime_id}")),
                )
                .unwrap();
                registered.wait();
                peak_checked.wait();
                drop(registration);
            })
        })
        .collect();

    let (phase_tx, phase_rx) = std::sync::mpsc::channel();
    let main_phases = {
        let dir = dir.clone();
        std::thread::spawn(move || {
            registered.wait();
            // While all 200 are held alive: list them, and resolve every one.
            let peak = list_live_runtimes(&dir).unwrap();
            let resolved: Vec<_> = peak
                .runtimes
                .iter()
                .map(|record| {
                    let resolved =
                        resolve_live_runtime(&dir, &record.endpoint, &record.source).unwrap();
                    (record.runtime_id.clone(), *resolved.address.expose())
                })
                .collect();
            peak_checked.wait();
            let _ = phase_tx.send((peak, resolved));
        })
    };
    let (peak, resolved) = phase_rx
        .recv_timeout(PHASE_DEADLINE)
        .expect("the 200 registrations did not all complete in time");
    main_phases
        .join()
        .expect("listing or resolving at the peak failed");

    assert!(peak.ignored.is_empty(), "{:?}", peak.ignored);
    let mut ids: Vec<String> = peak.runtimes.iter().map(|r| r.runtime_id.clone()).collect();
    ids.sort();
    let mut expected: Vec<String> = (0..REGISTRATIONS).map(|n| format!("storm-{n}")).collect();
    expected.sort();
    assert_eq!(
        ids, expected,
        "a registration is missing or duplicated at the peak"
    );
    assert_eq!(resolved.len(), REGISTRATIONS);
    for (runtime_id, address) in resolved {
        let n: u16 = runtime_id["storm-".len()..].parse().unwrap();
        assert_eq!(
            address,
            loopback(30_000 + n),
            "{runtime_id} resolved to the wrong address"
        );
    }

    for worker in workers {
        worker.join().expect("a registering thread failed");
    }
    done.store(true, Ordering::SeqCst);
    let scans = lister
        .join()
        .expect("the lister saw a torn receipt or a bad resolve");
    eprintln!(
        "lister: {scans} scans, {} resolves",
        resolves.load(Ordering::SeqCst)
    );

    let after = list_live_runtimes(&dir).unwrap();
    assert!(
        after.runtimes.is_empty() && after.ignored.is_empty(),
        "{after:?}"
    );
    scratch.assert_empty();
}
