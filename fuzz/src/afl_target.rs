//! AFL++ entry point for long coverage-guided runs: `afl-target <target>` reads one input from
//! stdin per iteration (persistent mode) and runs it through the same target as the stable driver.
//! Build with `cargo afl build --release --features afl --bin afl-target`; see docs/fuzzing.md.

use std::cell::RefCell;

use supercode_fuzz::{target, Target, TARGETS};

thread_local! {
    // Built once per process (temp dirs, a reaped child for the dead pid), reused per input.
    static TARGET: RefCell<Option<Box<dyn Target>>> = const { RefCell::new(None) };
}

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
    let Some(built) = target(&name) else {
        eprintln!("usage: afl-target <{}>", TARGETS.join("|"));
        std::process::exit(2);
    };
    TARGET.with(|t| *t.borrow_mut() = Some(built));
    afl::fuzz!(|data: &[u8]| {
        TARGET.with(|t| t.borrow_mut().as_mut().unwrap().run(data));
    });
}
