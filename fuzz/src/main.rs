//! Blind-mutation fuzz driver on stable Rust: `fuzz <target> [--seconds N] [--seed S]`.
//!
//! Replays every seed of `corpus/<target>/` first, then runs batches of proptest cases (a seed
//! plus up to six mutations, see `mutate.rs`) until the time is up. Batch `k` uses an RNG seeded
//! from `S` and `k`, so a run is reproducible from its seed and the same seed always explores the
//! same inputs. A failing input is shrunk by proptest, saved under `artifacts/<target>/`, and the
//! driver exits 1; replay it with `fuzz <target> --replay FILE`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use supercode_fuzz::mutate::{apply, input};
use supercode_fuzz::{target, TARGETS};

/// Cases per batch: small enough that the deadline is checked often, large enough that batch
/// setup is noise.
const BATCH_CASES: u32 = 512;
/// Default run length when `--seconds` is not given.
const DEFAULT_SECONDS: u64 = 20;

fn usage() -> ExitCode {
    eprintln!(
        "usage: fuzz <{}> [--seconds N] [--seed S] | fuzz <target> --replay FILE",
        TARGETS.join("|")
    );
    ExitCode::from(2)
}

fn load_corpus(name: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(name);
    let mut seeds: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read corpus {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    seeds.sort();
    assert!(!seeds.is_empty(), "corpus {} is empty", dir.display());
    seeds
}

fn save_artifact(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("artifacts")
        .join(name);
    std::fs::create_dir_all(&dir).unwrap();
    // FNV-1a: a stable name for the same input.
    let hash = bytes.iter().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100000001b3)
    });
    let path = dir.join(format!("crash-{hash:016x}"));
    std::fs::write(&path, bytes).unwrap();
    path
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first().cloned() else {
        return usage();
    };
    let Some(mut fuzz_target) = target(&name) else {
        return usage();
    };
    let flag = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if let Some(file) = flag("--replay") {
        let bytes = std::fs::read(&file).expect("read the input to replay");
        fuzz_target.run(&bytes);
        println!("{name}: {file} passes");
        return ExitCode::SUCCESS;
    }
    let seconds: u64 =
        flag("--seconds").map_or(DEFAULT_SECONDS, |s| s.parse().expect("--seconds N"));
    let seed: u64 = flag("--seed").map_or(1, |s| s.parse().expect("--seed S"));

    // The panics we want are the target's; keep proptest's shrinking output readable.
    std::panic::set_hook(Box::new(|_| {}));

    let corpus = load_corpus(&name);
    for (path, bytes) in &corpus {
        if let Err(panic) =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fuzz_target.run(bytes)))
        {
            let message = panic_message(&panic);
            eprintln!("{name}: seed {} fails: {message}", path.display());
            return ExitCode::FAILURE;
        }
    }
    let seeds: Vec<Vec<u8>> = corpus.into_iter().map(|(_, b)| b).collect();
    // proptest wants an `Fn` test; the target keeps state between inputs.
    let fuzz_target = std::cell::RefCell::new(fuzz_target);

    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut executed: u64 = 0;
    let mut batch: u64 = 0;
    while Instant::now() < deadline {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        key[8..16].copy_from_slice(&batch.to_le_bytes());
        let config = Config {
            cases: BATCH_CASES,
            failure_persistence: None,
            // Shrinking a slow target for ever would hide the failure: cap it.
            max_shrink_iters: 4096,
            ..Config::default()
        };
        let mut runner =
            TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &key));
        let result = runner.run(&input(seeds.len()), |(seed_index, mutations)| {
            let data = apply(&seeds, seed_index, &mutations);
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                fuzz_target.borrow_mut().run(&data)
            }))
            .map_err(|panic| TestCaseError::fail(panic_message(&panic)))
        });
        executed += u64::from(BATCH_CASES);
        match result {
            Ok(()) => {}
            Err(TestError::Fail(reason, (seed_index, mutations))) => {
                let data = apply(&seeds, seed_index, &mutations);
                let path = save_artifact(&name, &data);
                eprintln!(
                    "{name}: FAILED after ~{executed} inputs (seed {seed}, batch {batch}): {reason}\n  \
                     minimal input: {} ({} bytes, seed #{seed_index} + {mutations:?})\n  \
                     replay: cargo run --release --manifest-path fuzz/Cargo.toml --bin fuzz -- {name} --replay {}",
                    path.display(),
                    data.len(),
                    path.display()
                );
                return ExitCode::FAILURE;
            }
            Err(other) => {
                eprintln!("{name}: runner error: {other}");
                return ExitCode::FAILURE;
            }
        }
        batch += 1;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let outcomes = fuzz_target.borrow().outcomes();
    println!(
        "{name}: {} seeds + {executed} mutated inputs in {elapsed:.1} s ({:.0}/s), seed {seed}, no failure{}{outcomes}",
        seeds.len(),
        executed as f64 / elapsed,
        if outcomes.is_empty() { "" } else { "; " },
    );
    ExitCode::SUCCESS
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_string()))
        .unwrap_or_else(|| "panic".into())
}
