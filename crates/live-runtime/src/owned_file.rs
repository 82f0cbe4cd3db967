//! Reading and writing the small files other programs leave for us: receipts here, and the
//! `$CANON_HOME` files of crate `canon-local`. One implementation serves both directories.
//!
//! Both directories are shared with foreign writers (Node and Python runtimes, `@canonmsg/core`)
//! and with anything else running as the user, a broken sync tool included, so a file is read only
//! if it is what it claims to be. [`read_owned_file`] opens without following a symbolic link and
//! without blocking (a FIFO cannot hang a scan), then checks the opened file itself: a regular
//! file, owned by the user, allowed by its [`ModeRule`], within its size cap; and it reads at most
//! the cap, so a file that grows (or `/dev/zero` behind a link) costs nothing. [`parse_json`] caps
//! the nesting depth. [`StagedFile`] writes through an exclusive-create, no-follow temp file that
//! is fsynced and renamed over the target, so readers never see a partial file and a planted
//! temp-name link is never written through.
//!
//! Reasons are sentences for people and never quote a file's content (it may hold a secret).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use serde_json::Value;

use crate::process::effective_uid;

/// How deeply JSON may nest. `serde_json` itself refuses anything deeper than 128 levels (so a
/// hostile `[[[[…` cannot overflow the stack while parsing), and our writers recurse over what
/// was parsed; files written by the package or a runtime nest four or five levels.
pub const MAX_JSON_DEPTH: usize = 128;

/// What a file's permission bits may grant beyond its owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModeRule {
    /// Owner only: any group or other bit refuses the file (receipts, whose format says 0600).
    OwnerOnly,
    /// A group or other *write* bit refuses the file: anyone could have written it. A group or
    /// other *read* bit is accepted with a warning, and the file is left as it is: `@canonmsg/core`
    /// writes 0600, but its older versions and other tools wrote 0644, and changing a file the
    /// user owns behind their back is not ours to do.
    WarnWhenReadable,
}

/// How one kind of file is read.
#[derive(Clone, Copy, Debug)]
pub struct FileRules {
    /// What one such file is called in messages: "receipt", "Canon file".
    pub singular: &'static str,
    /// And several: "receipts", "Canon files".
    pub plural: &'static str,
    /// The largest file that is read.
    pub max_bytes: u64,
    /// Which permission bits beyond the owner's are allowed.
    pub mode: ModeRule,
}

/// A file that passed every check of its [`FileRules`].
#[derive(Debug)]
pub struct OwnedFile {
    /// Its content (at most the cap).
    pub bytes: Vec<u8>,
    /// Set when it was read despite something the user should see and fix (its mode lets other
    /// users read it).
    pub warning: Option<String>,
}

/// Why a file was not read, for people. Never quotes the file's content.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct FileRefused {
    /// The sentence.
    pub reason: String,
}

impl FileRefused {
    fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

/// Reads `path` by `rules`. `Ok(None)` when there is no such file.
///
/// Looks at the name first (`symlink_metadata`: a link or a device is refused without being
/// opened), then opens with `O_NOFOLLOW | O_NONBLOCK` and checks the *opened* file with `fstat`:
/// a file swapped between the look and the open is judged by what was opened. Reads at most
/// `max_bytes + 1` bytes.
pub fn read_owned_file(path: &Path, rules: &FileRules) -> Result<Option<OwnedFile>, FileRefused> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(FileRefused::new(format!("it cannot be inspected ({e})"))),
        Ok(meta) => read_owned_entry(path, meta.file_type(), rules),
    }
}

/// [`read_owned_file`] for a name whose type was already looked at: the type a directory listing
/// gave ([`fs::DirEntry::file_type`], which costs no system call where the file system records
/// it, as ext4, xfs, btrfs and tmpfs do). A scan of a directory saves one `statx` per file.
pub fn read_owned_entry(
    path: &Path,
    looked: fs::FileType,
    rules: &FileRules,
) -> Result<Option<OwnedFile>, FileRefused> {
    let plural = rules.plural;
    if looked.is_symlink() {
        return Err(FileRefused::new(format!(
            "it is a symbolic link; {plural} must be regular files, and links are never followed"
        )));
    }
    if !looked.is_file() {
        return Err(not_regular(looked));
    }
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let mut file = match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => File::from(fd),
        Err(Errno::NOENT) => return Ok(None),
        Err(Errno::LOOP) => {
            return Err(FileRefused::new(format!(
                "it is a symbolic link; {plural} must be regular files"
            )))
        }
        Err(e) => {
            let e = io::Error::from(e);
            return Err(FileRefused::new(format!("it cannot be opened ({e})")));
        }
    };
    let meta = file
        .metadata()
        .map_err(|e| FileRefused::new(format!("it cannot be inspected ({e})")))?;
    if !meta.is_file() {
        return Err(not_regular(meta.file_type()));
    }
    let me = effective_uid();
    if meta.uid() != me {
        return Err(FileRefused::new(format!(
            "it is owned by uid {}, not by you (uid {me}); only your own {plural} are trusted",
            meta.uid()
        )));
    }
    let warning = check_mode(meta.mode() & 0o777, rules)?;
    let max = rules.max_bytes;
    if meta.len() > max {
        return Err(FileRefused::new(format!(
            "it is {} bytes, over the {max}-byte {} limit",
            meta.len(),
            rules.singular
        )));
    }
    // Room for the whole file and one byte more, so a file that did not change is read by one
    // read and its end seen by a second.
    let expected = usize::try_from(meta.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(expected + 1);
    (&mut file)
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| FileRefused::new(format!("it cannot be read ({e})")))?;
    if bytes.len() as u64 > max {
        return Err(FileRefused::new(format!(
            "it grew past the {max}-byte {} limit while being read",
            rules.singular
        )));
    }
    Ok(Some(OwnedFile { bytes, warning }))
}

fn check_mode(mode: u32, rules: &FileRules) -> Result<Option<String>, FileRefused> {
    let plural = rules.plural;
    match rules.mode {
        ModeRule::OwnerOnly if mode & 0o077 != 0 => Err(FileRefused::new(format!(
            "its permissions ({mode:03o}) let other users read or write it; {plural} must be mode 0600"
        ))),
        ModeRule::WarnWhenReadable if mode & 0o022 != 0 => Err(FileRefused::new(format!(
            "its permissions ({mode:03o}) let other users write it, so anyone could have changed it; check it, then chmod 600 it"
        ))),
        ModeRule::WarnWhenReadable if mode & 0o044 != 0 => Ok(Some(format!(
            "its permissions ({mode:03o}) let other users read it; it is used as it is, but {plural} should be mode 0600: chmod 600 it"
        ))),
        _ => Ok(None),
    }
}

fn not_regular(kind: fs::FileType) -> FileRefused {
    FileRefused::new(format!(
        "it is not a regular file ({}); remove it",
        file_kind(kind)
    ))
}

/// What kind of thing a directory entry is, in words.
pub fn file_kind(kind: fs::FileType) -> &'static str {
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Parses JSON text, refusing nesting deeper than [`MAX_JSON_DEPTH`]. The reason names the
/// position of a syntax error, never the content around it.
pub fn parse_json(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| {
        let detail = if e.to_string().contains("recursion limit") {
            format!("nested too deeply: more than {MAX_JSON_DEPTH} levels")
        } else {
            format!("line {}, column {}", e.line(), e.column())
        };
        format!("it is not valid JSON ({detail})")
    })
}

/// Removes `path` and makes the removal durable (fsyncs its directory, best effort); a file that
/// is already gone is `Ok(())`.
pub fn remove_durably(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Ok(()) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                let _ = File::open(dir).and_then(|d| d.sync_all());
            }
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Writes `bytes` to `dir/name` atomically with mode 0600 through a `.`-prefixed temp file in the
/// same directory (see [`StagedFile::write`]). Readers never see a partial file.
pub fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    StagedFile::write(dir, name, bytes)?.publish()
}

/// The bytes of a file, durable in a temp file next to their target and not yet visible under its
/// name; [`StagedFile::publish`] renames them into place. Dropped unpublished, the temp file is
/// removed.
#[derive(Debug)]
pub struct StagedFile {
    target: PathBuf,
    temp: Option<PathBuf>,
}

impl StagedFile {
    /// Stages `bytes` for `dir/name` in `.<name>.<random>.<pid>.tmp`: the convention of the
    /// receipt directory, whose readers skip dot-files and whose scan cleans up a temp file once its
    /// writer pid is gone.
    pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<Self> {
        let temp = dir.join(format!(
            ".{name}.{:08x}.{}.tmp",
            rand::random::<u32>(),
            std::process::id()
        ));
        Self::write_via(&temp, &dir.join(name), bytes)
    }

    /// Stages `bytes` for `target` in the temp file `temp` (same directory): created exclusively
    /// (`O_CREAT | O_EXCL`, so an existing file or a planted link at that name is an error, never
    /// written through: POSIX makes a link at the name EEXIST), mode 0600, written and fsynced.
    pub fn write_via(temp: &Path, target: &Path, bytes: &[u8]) -> io::Result<Self> {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(temp)?;
        // From here on the temp file exists: an error below drops `staged`, which removes it.
        let staged = Self {
            target: target.to_path_buf(),
            temp: Some(temp.to_path_buf()),
        };
        file.write_all(bytes)?;
        file.sync_all()?;
        Ok(staged)
    }

    /// Renames the temp file over the target and makes the rename durable (fsyncs the directory).
    pub fn publish(mut self) -> io::Result<()> {
        let Some(temp) = self.temp.take() else {
            return Ok(());
        };
        if let Err(e) = fs::rename(&temp, &self.target) {
            let _ = fs::remove_file(&temp);
            return Err(e);
        }
        match self.target.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => File::open(dir)?.sync_all(),
            _ => Ok(()),
        }
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = fs::remove_file(temp);
        }
    }
}
