//! Reading one receipt file: every check a file must pass before it is trusted (through
//! [`crate::owned_file`]'s reader, then the format), and what the file is now: a running
//! runtime's, a stale one's (its pid reused by another process), a dead process's, or a foreign
//! receipt still to be adopted. A read changes nothing on disk: removing a dead process's receipt
//! and adopting a foreign one are the reconciliation step's (`reconcile`).

use std::fs;
use std::net::SocketAddr;

use serde::Deserialize;
use serde_json::{Map, Value};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::dir::check_dir;
use super::types::{Result, ENDPOINT_HEX_DIGITS, ENDPOINT_PREFIX};
use super::{
    IgnoredReceipt, LiveRuntimeEndpoint, LiveRuntimeMetadata, LiveRuntimeReceiptError,
    LiveRuntimeRecord, LiveRuntimeSource, LiveRuntimeStatus, ReceiptDir, ReceiptScan,
    RECEIPT_VERSION,
};
use crate::owned_file::{parse_json, read_owned_entry, read_owned_file, FileRules, ModeRule};
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
    /// Set for a foreign receipt that reconciliation has still to adopt.
    pub(super) adoption: Option<Adoption>,
}

/// What adopting a foreign receipt writes: its inline token (into the secret store) and the
/// document without it, its start time filled in (over the file).
pub(super) struct Adoption {
    /// The receipt as it is to be rewritten.
    pub(super) document: Map<String, Value>,
    /// The token the file carried, if it carried one.
    pub(super) token: Option<Sensitive<String>>,
}

/// What one file is, as read or as reconciliation left it.
pub(super) enum Scan {
    Valid(Box<ValidReceipt>),
    Ignored(IgnoredReceipt),
    /// Its process has exited: a dead runtime's receipt, still on disk until reconciled.
    Exited {
        endpoint: LiveRuntimeEndpoint,
        pid: u32,
        /// What the receipt said, for whoever tells the user of the death.
        record: Box<LiveRuntimeRecord>,
    },
    /// No file under the name. `exited_pid`: reconciliation found its process exited, and the
    /// receipt is gone now (removed by it, or by someone else first).
    Gone {
        exited_pid: Option<u32>,
    },
    NotAReceipt,
}

impl Scan {
    /// What a caller of the public API is told.
    pub(super) fn outcome(&self) -> ReceiptScan {
        match self {
            Scan::Valid(valid) => ReceiptScan::Listed(valid.record.clone()),
            Scan::Ignored(ignored) => ReceiptScan::Ignored(ignored.clone()),
            Scan::Exited { pid, .. }
            | Scan::Gone {
                exited_pid: Some(pid),
            } => ReceiptScan::Exited { pid: *pid },
            Scan::Gone { exited_pid: None } => ReceiptScan::Gone,
            Scan::NotAReceipt => ReceiptScan::NotAReceipt,
        }
    }
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

/// Reads and validates one receipt file, changing nothing. `looked` is its type when a directory
/// listing already gave it (the look before the open then costs nothing); `None` looks at the name.
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
    let (mut object, mut fields) = match parse_receipt(file_name, bytes) {
        Ok(parsed) => parsed,
        Err(reason) => return ignored(reason),
    };
    let token = fields.token.take().map(Sensitive::new);
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
    let exited = |fields: &ReceiptFields| Scan::Exited {
        endpoint: endpoint.clone(),
        pid,
        record: Box::new(LiveRuntimeRecord {
            endpoint: endpoint.clone(),
            runtime_id: fields.runtime_id.clone(),
            source: fields.source.clone(),
            metadata: fields.metadata.clone(),
            pid,
            server_pid: fields.server.as_ref().map(|s| s.pid),
            registered_at: format_rfc3339(registered),
            status: LiveRuntimeStatus::Stale {
                reason: format!("PID {pid} has exited"),
            },
        }),
    };
    let Some(now) = ProcessIdentity::of(pid) else {
        return exited(&fields);
    };
    // A runtime served by another process (a host) ends when that process does: nothing serves
    // its address any more. It is exited like one whose own process exited,
    // and reconciliation removes its receipt.
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
                return exited(&fields);
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

    // A foreign receipt: its token inline, or no start time. Adopting it is reconciliation's.
    let adoption = (token.is_some() || fields.process.start_time.is_none()).then(|| {
        object.remove("token");
        if let Some(Value::Object(proc_fields)) = object.get_mut("process") {
            proc_fields.insert("startTime".into(), Value::from(process.start_time));
        }
        Adoption {
            document: object,
            token,
        }
    });

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
        adoption,
    }))
}

pub(super) fn format_rfc3339(at: OffsetDateTime) -> String {
    at.to_offset(time::UtcOffset::UTC)
        .format(&Rfc3339)
        .unwrap_or_default()
}

/// Reads and validates ONE receipt file by name, changing nothing: what an incremental rescan
/// needs when a file watcher reports that `file_name` changed ([`ReceiptFiles::refresh`] also
/// keeps the result).
///
/// It applies every check [`list_live_runtimes`] applies (except the duplicate-endpoint check,
/// which needs the whole directory). A receipt whose process has exited is reported as
/// [`ReceiptScan::Exited`] and left in place, and a foreign receipt is listed as it is:
/// [`reconcile_receipt`] removes the one and adopts the other. `file_name` must be a bare file
/// name; temp files and non-`.json` names are [`ReceiptScan::NotAReceipt`].
///
/// [`ReceiptFiles::refresh`]: super::ReceiptFiles::refresh
/// [`list_live_runtimes`]: super::list_live_runtimes
/// [`reconcile_receipt`]: super::reconcile_receipt
pub fn read_receipt(dir: &ReceiptDir, file_name: &str) -> Result<ReceiptScan> {
    Ok(read_named(dir, file_name)?.outcome())
}

/// [`read_receipt`], keeping what it found for reconciliation or a cache.
pub(super) fn read_named(dir: &ReceiptDir, file_name: &str) -> Result<Scan> {
    check_file_name(file_name)?;
    if !check_dir(dir)? {
        return Ok(Scan::Gone { exited_pid: None });
    }
    Ok(scan_file(dir, file_name, None))
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
