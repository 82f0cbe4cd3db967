//! Many registrations appearing and disappearing while another thread keeps listing.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use live_runtime::{list_live_runtimes, register_live_runtime, resolve_live_runtime};

use crate::common::{file_store_scratch, loopback, resolve_listed, source, token};

const WORKERS: usize = 50;
const CYCLES_PER_WORKER: usize = 3;

#[test]
fn parallel_register_drop_cycles_never_show_torn_receipts_lose_one_or_leave_files() {
    let scratch = file_store_scratch();
    let dir = scratch.dir.clone();
    let start = Arc::new(Barrier::new(WORKERS + 1));
    let done = Arc::new(AtomicBool::new(false));
    let lister_resolved = Arc::new(AtomicUsize::new(0));

    let lister = {
        let (dir, start, done, lister_resolved) = (
            dir.clone(),
            start.clone(),
            done.clone(),
            lister_resolved.clone(),
        );
        std::thread::spawn(move || {
            start.wait();
            let mut scans = 0usize;
            // At least a few scans even if the workers finish first.
            while !done.load(Ordering::SeqCst) || scans < 5 {
                let list = list_live_runtimes(&dir).unwrap();
                assert!(
                    list.ignored.is_empty(),
                    "torn or refused receipt during concurrent writes: {:?}",
                    list.ignored
                );
                for record in &list.runtimes {
                    if resolve_listed(&dir, record) {
                        lister_resolved.fetch_add(1, Ordering::SeqCst);
                    }
                }
                scans += 1;
            }
            scans
        })
    };

    let workers: Vec<_> = (0..WORKERS)
        .map(|worker| {
            let (dir, start) = (dir.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                for cycle in 0..CYCLES_PER_WORKER {
                    let runtime_id = format!("rt-{worker}-{cycle}");
                    let src = source(&format!("session-{worker}-{cycle}"));
                    let registration = register_live_runtime(
                        &dir,
                        &runtime_id,
                        src.clone(),
                        loopback(20_000 + worker as u16),
                        token(&format!("token-{runtime_id}")),
                    )
                    .unwrap();
                    // While it is alive it is listed and resolvable.
                    let list = list_live_runtimes(&dir).unwrap();
                    assert!(list.ignored.is_empty(), "{:?}", list.ignored);
                    assert!(
                        list.runtimes
                            .iter()
                            .any(|r| &r.endpoint == registration.endpoint()),
                        "own registration missing from the list"
                    );
                    let resolved =
                        resolve_live_runtime(&dir, registration.endpoint(), &src).unwrap();
                    assert_eq!(resolved.token.expose(), &format!("token-{runtime_id}"));
                    assert_eq!(*resolved.address.expose(), loopback(20_000 + worker as u16));
                    drop(registration);
                }
            })
        })
        .collect();

    for worker in workers {
        worker.join().expect("a worker failed");
    }
    done.store(true, Ordering::SeqCst);
    let scans = lister
        .join()
        .expect("the lister saw a torn or lost receipt");
    assert!(scans >= 5);
    eprintln!(
        "lister: {scans} scans, {} successful resolves",
        lister_resolved.load(Ordering::SeqCst)
    );

    assert!(list_live_runtimes(&dir).unwrap().runtimes.is_empty());
    scratch.assert_empty();
}
