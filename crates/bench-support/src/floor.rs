//! The inventory's floor: what any inventory of a receipt directory must do at least,
//! timed beside the real one in the same run.

use std::fs;
use std::path::Path;

use serde_json::Value;

/// Lists `dir`, reads and parses every file, and reads the `/proc/<pid>/stat` of the process
/// each parsed file names (`process.pid`). Returns how many files parsed.
pub fn read_and_parse(dir: &Path) -> usize {
    let mut parsed = 0;
    for entry in fs::read_dir(dir).unwrap() {
        let bytes = fs::read(entry.unwrap().path()).unwrap();
        if let Ok(value) = serde_json::from_slice::<Value>(&bytes) {
            parsed += 1;
            if let Some(pid) = value["process"]["pid"].as_u64() {
                std::hint::black_box(fs::read(format!("/proc/{pid}/stat")).ok());
            }
        }
    }
    parsed
}
