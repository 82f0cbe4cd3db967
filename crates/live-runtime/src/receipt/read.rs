//! Reading one receipt file: every check a file must pass before it is trusted (through
//! [`crate::owned_file`]'s reader, then the format), and the reconciliation a read makes: a receipt
//! whose process has exited is removed with its token, a reused pid makes it stale, and a foreign
//! receipt is adopted (its inline token moved into the secret store, its start time filled in, the
//! file rewritten atomically without the token).

use std::fs;
use std::io;
use std::net::SocketAddr;
use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::dir::check_dir;
use super::types::{Result, ENDPOINT_HEX_DIGITS, ENDPOINT_PREFIX};
use super::{
    secret_account, IgnoredReceipt, LiveRuntimeEndpoint, LiveRuntimeMetadata,
    LiveRuntimeReceiptError, LiveRuntimeRecord, LiveRuntimeSource, LiveRuntimeStatus, ReceiptDir,
    ReceiptScan, RECEIPT_VERSION,
};
use crate::owned_file::{
    parse_json, read_owned_entry, read_owned_file, write_atomically, FileRules, ModeRule,
};
use crate::process::ProcessIdentity;
use crate::secret::Sensitive;

/// Largest receipt file that will be read. Real receipts are well under 2 KiB; the cap stops a
/// hostile or corrupt file (or a 100 MB sparse file) from costing memory or time on every scan.
pub const MAX_RECEIPT_BYTES: u64 = 64 * 1024;

/// The receipt fields this crate interprets; anything else in the file is preserved on rewrite.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReceiptFields {
    endpoint: String,
    runtime_id: String,
    source: LiveRuntimeSource,
    process: ReceiptProcess,
    #[serde(default)]
    server: Option<ReceiptProcess>,
    address: String,
    registered_at: String,
    #[serde(default)]
    metadata: LiveRuntimeMetadata,
    #[serde(default)]
    token: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReceiptProcess {
    pid: u32,
    #[serde(default)]
    start_time: Option<u64>,
}

/// A receipt that passed every check.
pub(super) struct ValidReceipt {
    pub(super) record: LiveRuntimeRecord,
    pub(super) registered: OffsetDateTime,
    pub(super) address: SocketAddr,
    pub(super) process: ProcessIdentity,
}

pub(super) enum Scan {
    Valid(Box<ValidReceipt>),
    Ignored(IgnoredReceipt),
    Gone { exited_pid: Option<u32> },
    NotAReceipt,
}

/// How receipts are read: owner only (0600), at most [`MAX_RECEIPT_BYTES`].
pub(super) const RECEIPT_RULES: FileRules = FileRules {
    singular: "receipt",
    plural: "receipts",
    max_bytes: MAX_RECEIPT_BYTES,
    mode: ModeRule::OwnerOnly,
};

/// Parses and validates receipt bytes. Reasons never quote field values (the address and token
/// are secrets).
fn parse_receipt(
    file_name: &str,
    bytes: Vec<u8>,
) -> std::result::Result<(Map<String, Value>, ReceiptFields), String> {
    let text = String::from_utf8(bytes).map_err(|_| "it is not valid UTF-8".to_string())?;
    let value = parse_json(&text)?;
    let Value::Object(object) = value else {
        return Err("it is not a JSON object".into());
    };
    match object.get("version").and_then(Value::as_u64) {
        Some(RECEIPT_VERSION) => {}
        Some(other) => {
            return Err(format!(
                "it uses receipt format version {other}, but this build understands version {RECEIPT_VERSION}; update Supercode Tray"
            ))
        }
        None => return Err("it has no numeric \"version\" field".into()),
    }
    // Deserialized from the parsed document in place, not from a copy of it: the object itself is
    // kept for a rewrite (adoption), and copying every receipt's tree cost more than parsing it.
    let fields = ReceiptFields::deserialize(&object).map_err(|e| {
        // serde messages about wrong types quote the offending value, which could be a token
        // or an address: only "missing field" messages are safe to pass on.
        let message = e.to_string();
        if message.starts_with("missing field") {
            format!("it does not follow receipt format version 1 ({message})")
        } else {
            "it does not follow receipt format version 1 (a field has the wrong type or value)"
                .to_string()
        }
    })?;
    let endpoint: LiveRuntimeEndpoint = fields.endpoint.parse().map_err(|_| {
        format!("its endpoint is not {ENDPOINT_PREFIX} followed by {ENDPOINT_HEX_DIGITS} lowercase hex digits")
    })?;
    if file_name.strip_suffix(".json") != Some(endpoint.as_str()) {
        return Err(format!(
            "its file name does not match its endpoint {endpoint}; a receipt must be saved as <endpoint>.json (is it a copy or a duplicate of another receipt?)"
        ));
    }
    Ok((object, fields))
}

/// Reads, validates and reconciles one receipt file. `looked` is its type when a directory listing
/// already gave it (the look before the open then costs nothing); `None` looks at the name.
pub(super) fn scan_file(dir: &ReceiptDir, file_name: &str, looked: Option<fs::FileType>) -> Scan {
    if file_name.starts_with('.') || !file_name.ends_with(".json") || file_name.contains('/') {
        return Scan::NotAReceipt;
    }
    let ignored = |reason: String| {
        Scan::Ignored(IgnoredReceipt {
            file: file_name.to_string(),
            reason,
        })
    };
    let path = dir.path.join(file_name);
    let read = match looked {
        Some(looked) => read_owned_entry(&path, looked, &RECEIPT_RULES),
        None => read_owned_file(&path, &RECEIPT_RULES),
    };
    let bytes = match read {
        Ok(Some(file)) => file.bytes,
        Ok(None) => return Scan::Gone { exited_pid: None },
        Err(refused) => return ignored(refused.reason),
    };
    let (mut object, fields) = match parse_receipt(file_name, bytes) {
        Ok(parsed) => parsed,
        Err(reason) => return ignored(reason),
    };
    let token = fields.token.map(Sensitive::new);
    let endpoint: LiveRuntimeEndpoint = match fields.endpoint.parse() {
        Ok(endpoint) => endpoint,
        Err(e) => return ignored(e.to_string()),
    };
    let Ok(address) = fields.address.parse::<SocketAddr>() else {
        return ignored("its address is not an IP:port pair".into());
    };
    if !address.ip().is_loopback() {
        return ignored(
            "its address is not on loopback (127.0.0.0/8 or ::1); only local runtimes are trusted"
                .into(),
        );
    }
    if fields.runtime_id.trim().is_empty() {
        return ignored("its runtimeId is empty".into());
    }
    let Ok(registered) = OffsetDateTime::parse(&fields.registered_at, &Rfc3339) else {
        return ignored("its registeredAt is not an RFC 3339 timestamp".into());
    };
    let pid = fields.process.pid;
    if pid == 0 {
        return ignored("its process pid is 0".into());
    }
    let account = secret_account(&endpoint);

    let Some(now) = ProcessIdentity::of(pid) else {
        return remove_dead(dir, &path, &endpoint, &account, pid, file_name);
    };
    // A runtime served by another process (a host) ends when that process does: nothing serves
    // its address any more. Its receipt is removed like one whose own process exited.
    let server_pid = match &fields.server {
        None => None,
        Some(server) => {
            let alive = server.start_time.is_some_and(|start| {
                ProcessIdentity {
                    pid: server.pid,
                    start_time: start,
                }
                .is_alive()
            });
            if !alive {
                return remove_dead(dir, &path, &endpoint, &account, pid, file_name);
            }
            Some(server.pid)
        }
    };
    let process = ProcessIdentity {
        pid,
        start_time: fields.process.start_time.unwrap_or(now.start_time),
    };
    let status = if process.start_time == now.start_time {
        LiveRuntimeStatus::Running
    } else {
        LiveRuntimeStatus::Stale {
            reason: format!("PID {pid} now belongs to another process"),
        }
    };

    // Adopt a foreign receipt: token into the secret store, start time filled in, file rewritten.
    if token.is_some() || fields.process.start_time.is_none() {
        if let Some(token) = &token {
            if let Err(e) = dir.secrets.set(&account, token) {
                return ignored(format!(
                    "its inline token could not be moved into the {} ({e}); the file was left as is and will be retried",
                    dir.secrets.describe()
                ));
            }
        }
        object.remove("token");
        if let Some(Value::Object(proc_fields)) = object.get_mut("process") {
            proc_fields.insert("startTime".into(), Value::from(process.start_time));
        }
        let rewritten = serde_json::to_vec_pretty(&Value::Object(object))
            .map_err(io::Error::other)
            .and_then(|bytes| write_atomically(&dir.path, file_name, &bytes));
        if let Err(e) = rewritten {
            return ignored(format!(
                "its token was stored but the receipt could not be rewritten without it ({e}); it will be retried"
            ));
        }
    }

    Scan::Valid(Box::new(ValidReceipt {
        record: LiveRuntimeRecord {
            endpoint,
            runtime_id: fields.runtime_id,
            source: fields.source,
            metadata: fields.metadata,
            pid,
            server_pid,
            registered_at: format_rfc3339(registered),
            status,
        },
        registered,
        address,
        process,
    }))
}

/// Removes the receipt of a runtime whose process (or server) exited, secret first so that a
/// failure leaves the receipt in place for the next scan to retry.
fn remove_dead(
    dir: &ReceiptDir,
    path: &Path,
    endpoint: &LiveRuntimeEndpoint,
    account: &str,
    pid: u32,
    file_name: &str,
) -> Scan {
    let ignored = |reason: String| {
        Scan::Ignored(IgnoredReceipt {
            file: file_name.to_string(),
            reason,
        })
    };
    if let Err(e) = dir.secrets.delete(account) {
        return ignored(format!(
            "its process (PID {pid}) has exited, but its token could not be removed from the {}: {e}",
            dir.secrets.describe()
        ));
    }
    match fs::remove_file(path) {
        // No directory fsync here: a removal lost in a crash only means the next list removes
        // the receipt again, while a sync per removal waits on the disk once per dead receipt
        // and turns a list that finds thousands of them into seconds.
        // Only the read whose removal took is counted: a runtime that unregistered removed
        // its receipt itself, and a read that raced it finds nothing to remove.
        Ok(()) => {
            dir.reaped(endpoint);
            Scan::Gone {
                exited_pid: Some(pid),
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Scan::Gone {
            exited_pid: Some(pid),
        },
        Err(e) => ignored(format!(
            "its process (PID {pid}) has exited, but the receipt could not be removed ({e})"
        )),
    }
}

pub(super) fn format_rfc3339(at: OffsetDateTime) -> String {
    at.to_offset(time::UtcOffset::UTC)
        .format(&Rfc3339)
        .unwrap_or_default()
}

/// Reads, validates and reconciles ONE receipt file by name — what an incremental rescan needs when
/// a file watcher reports that `file_name` changed ([`ReceiptFiles::refresh`] also keeps the
/// result).
///
/// It applies every check [`list_live_runtimes`] applies (except the duplicate-endpoint check,
/// which needs the whole directory) and the same reconciliation: a receipt whose process exited is
/// removed and reported as [`ReceiptScan::Exited`]; a foreign receipt is adopted. `file_name` must
/// be a bare file name; temp files and non-`.json` names are [`ReceiptScan::NotAReceipt`].
///
/// [`ReceiptFiles::refresh`]: super::ReceiptFiles::refresh
/// [`list_live_runtimes`]: super::list_live_runtimes
pub fn read_receipt(dir: &ReceiptDir, file_name: &str) -> Result<ReceiptScan> {
    check_file_name(file_name)?;
    if !check_dir(dir)? {
        return Ok(ReceiptScan::Gone);
    }
    Ok(match scan_file(dir, file_name, None) {
        Scan::Valid(valid) => ReceiptScan::Listed(valid.record),
        Scan::Ignored(ignored) => ReceiptScan::Ignored(ignored),
        Scan::Gone {
            exited_pid: Some(pid),
        } => ReceiptScan::Exited { pid },
        Scan::Gone { exited_pid: None } => ReceiptScan::Gone,
        Scan::NotAReceipt => ReceiptScan::NotAReceipt,
    })
}

pub(super) fn check_file_name(file_name: &str) -> Result<()> {
    if file_name.is_empty() || file_name.contains('/') || file_name.contains('\0') {
        return Err(LiveRuntimeReceiptError::Invalid {
            what: "receipt file name".into(),
            reason: "pass a bare file name from the receipt directory, not a path".into(),
        });
    }
    Ok(())
}
