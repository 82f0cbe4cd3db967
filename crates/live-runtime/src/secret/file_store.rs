//! The opt-in plaintext file store of [`SecretStore`](super::SecretStore): one file per account,
//! 0600, in a private 0700 directory kept by the receipt directory's rule, written through
//! [`crate::owned_file`]'s atomic writer and read back through its reader. Only used when the user
//! sets `SUPERCODE_SECRET_STORE=file`; the secrets are readable by anything running as them.

use std::io;
use std::path::Path;

use super::{SecretStoreError, Sensitive};
use crate::owned_file::{read_owned_file, remove_durably, write_atomically, FileRules, ModeRule};

/// Largest secret the file store will read back; tokens are tens of bytes, so anything bigger is
/// not one of ours.
const MAX_SECRET_FILE_BYTES: u64 = 64 * 1024;

/// Maps an account name to a file name: ASCII letters, digits, `_` and `-` stay, every other byte
/// becomes `%XX`, so no account can name a path outside the directory or a hidden temp file.
fn account_file_name(account: &str) -> String {
    let mut name = String::with_capacity(account.len() + 8);
    for b in account.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            name.push(b as char);
        } else {
            name.push_str(&format!("%{b:02X}"));
        }
    }
    name
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> SecretStoreError + '_ {
    move |source| SecretStoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn ensure_private_dir(dir: &Path) -> Result<(), SecretStoreError> {
    crate::receipt::ensure_private_dir(dir).map_err(io_err(dir))
}

/// Stores (or replaces) the secret for `account` in `dir`.
pub(super) fn set(
    dir: &Path,
    account: &str,
    secret: &Sensitive<String>,
) -> Result<(), SecretStoreError> {
    ensure_private_dir(dir)?;
    let target = dir.join(account_file_name(account));
    write_atomically(dir, &account_file_name(account), secret.expose().as_bytes())
        .map_err(io_err(&target))
}

/// How secret files are read: owner only, at most [`MAX_SECRET_FILE_BYTES`].
const SECRET_FILE_RULES: FileRules = FileRules {
    singular: "secret file",
    plural: "secret files",
    max_bytes: MAX_SECRET_FILE_BYTES,
    mode: ModeRule::OwnerOnly,
};

/// Reads the secret for `account` from `dir`; `Ok(None)` when there is none.
pub(super) fn get(
    dir: &Path,
    account: &str,
) -> Result<Option<Sensitive<String>>, SecretStoreError> {
    let path = dir.join(account_file_name(account));
    let file = match read_owned_file(&path, &SECRET_FILE_RULES) {
        Ok(Some(file)) => file,
        Ok(None) => return Ok(None),
        Err(refused) => {
            return Err(SecretStoreError::Other {
                detail: format!(
                    "{} was not read: {refused}; remove it and store the secret again",
                    path.display()
                ),
            })
        }
    };
    String::from_utf8(file.bytes)
        .map(|s| Some(Sensitive::new(s)))
        .map_err(|_| SecretStoreError::Other {
            detail: format!("{} is not valid UTF-8", path.display()),
        })
}

/// Deletes the secret for `account` from `dir`; deleting a missing one is `Ok(())`.
pub(super) fn delete(dir: &Path, account: &str) -> Result<(), SecretStoreError> {
    let path = dir.join(account_file_name(account));
    remove_durably(&path).map_err(io_err(&path))
}
