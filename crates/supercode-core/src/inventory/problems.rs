//! How a `$CANON_HOME` file that was not read, or was read but should be fixed, is reported.

use crate::view::{FileWarning, IgnoredFile, IgnoredLocation};
use crate::Locations;

/// A problem's file, relative to `$CANON_HOME`.
fn canon_file(locations: &Locations, problem: &canon_local::FileProblem) -> String {
    problem
        .path
        .strip_prefix(locations.canon.root())
        .unwrap_or(&problem.path)
        .display()
        .to_string()
}

pub(super) fn canon_problem(
    locations: &Locations,
    problem: &canon_local::FileProblem,
) -> IgnoredFile {
    IgnoredFile {
        location: IgnoredLocation::Canon,
        file: canon_file(locations, problem),
        reason: problem.reason.clone(),
    }
}

pub(super) fn canon_warning(
    locations: &Locations,
    problem: &canon_local::FileProblem,
) -> FileWarning {
    FileWarning {
        location: IgnoredLocation::Canon,
        file: canon_file(locations, problem),
        reason: problem.reason.clone(),
    }
}
