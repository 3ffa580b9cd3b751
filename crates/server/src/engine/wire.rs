//! Small pieces of the wire the whole server shares: time stamps as
//! JavaScript writes them, ids, disclosure-safe text metadata, payload
//! redaction, argument readers, and the session event log.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value, json};
use time::{Duration, OffsetDateTime};

use adk_computer_use::digest::{sha256_hex, sha256_prefixed};

/// Now, to the millisecond (the precision of upstream's clock).
pub(crate) fn now() -> OffsetDateTime {
    let at = OffsetDateTime::now_utc();
    let extra = at.nanosecond() % 1_000_000;
    at - Duration::nanoseconds(i64::from(extra))
}

/// `at` as `Date.toISOString` writes it: UTC, milliseconds, `Z`.
pub(crate) fn stamp(at: OffsetDateTime) -> String {
    let at = at.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.millisecond()
    )
}

/// `ms` milliseconds after `at`.
pub(crate) fn after(at: OffsetDateTime, ms: u64) -> OffsetDateTime {
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    at.checked_add(Duration::milliseconds(ms))
        .unwrap_or(time::PrimitiveDateTime::MAX.assume_utc())
}

/// A time stamp, read leniently (RFC 3339); `None` when it does not parse.
pub(crate) fn parse_time(text: &str) -> Option<OffsetDateTime> {
    adk_computer_use::clock::parse_rfc3339("sim", "time", text).ok()
}

/// Whether the stamp `text` names a time at or before `at` (an unreadable
/// stamp is never reached, as `Date.parse` gives `NaN`).
pub(crate) fn reached(text: &str, at: OffsetDateTime) -> bool {
    parse_time(text).is_some_and(|t| t <= at)
}

/// A fresh id in the form of a version 4 UUID, unique in this process and
/// unlikely to repeat across processes.
pub(crate) fn uuid() -> String {
    static SEED: OnceLock<String> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let seed = SEED.get_or_init(|| {
        format!(
            "{}|{}",
            std::process::id(),
            OffsetDateTime::now_utc().unix_timestamp_nanos()
        )
    });
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let hex = sha256_hex(format!("{seed}|{n}"));
    let variant = match hex.as_bytes().get(16) {
        Some(b'0' | b'4' | b'8' | b'c') => '8',
        Some(b'1' | b'5' | b'9' | b'd') => '9',
        Some(b'2' | b'6' | b'a' | b'e') => 'a',
        _ => 'b',
    };
    format!(
        "{}-{}-4{}-{variant}{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

/// What an event says of a free text: its digest and its length (in UTF-16
/// units, as JavaScript counts), never the text.
pub(crate) fn text_metadata(text: &str) -> Value {
    json!({ "digest": sha256_prefixed(text), "length": text.encode_utf16().count() })
}

/// Keys whose values an event never carries.
fn secret_key(key: &str) -> bool {
    let key = key.to_lowercase();
    super::policy::names_a_secret(&key) || key.contains("authorization") || key.contains("cookie")
}

/// Replaces the values of secret-bearing keys, at any depth.
pub(crate) fn redact(value: Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.into_iter().map(redact).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, entry)| {
                    let entry = if secret_key(&key) {
                        json!("[REDACTED]")
                    } else {
                        redact(entry)
                    };
                    (key, entry)
                })
                .collect(),
        ),
        other => other,
    }
}

/// A string argument (the schema has checked its type).
pub(crate) fn text<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// A non-empty string argument: upstream drops empty optional strings.
pub(crate) fn given<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    text(args, key).filter(|s| !s.is_empty())
}

/// An integer argument.
pub(crate) fn int(args: &Value, key: &str) -> Option<i64> {
    args.get(key)
        .and_then(Value::as_f64)
        .filter(|n| n.fract() == 0.0)
        .map(|n| n as i64)
}

/// A window id as JavaScript compares it: a whole number is the same
/// number whether the JSON wrote `7` or `7.0`.
pub(crate) fn window_id(value: &Value) -> Value {
    match value.as_f64() {
        Some(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => json!(n as i64),
        _ => value.clone(),
    }
}

/// Every session's append-only event log.
#[derive(Default)]
pub(crate) struct EventLog {
    streams: BTreeMap<String, Vec<Value>>,
}

impl EventLog {
    /// Appends an event to `session_id`'s log.
    pub(crate) fn publish(
        &mut self,
        session_id: &str,
        action_id: Option<&str>,
        principal_id: &str,
        kind: &str,
        payload: Value,
    ) {
        let stream = self.streams.entry(session_id.to_owned()).or_default();
        let sequence = stream
            .last()
            .and_then(|e| e.get("sequence"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
            + 1;
        let mut event = Map::new();
        event.insert("schemaVersion".into(), json!(1));
        event.insert("eventId".into(), json!(uuid()));
        event.insert("sequence".into(), json!(sequence));
        event.insert("sessionId".into(), json!(session_id));
        if let Some(action_id) = action_id.filter(|a| !a.is_empty()) {
            event.insert("actionId".into(), json!(action_id));
        }
        event.insert("type".into(), json!(kind));
        event.insert("at".into(), json!(stamp(now())));
        event.insert("principalId".into(), json!(principal_id));
        event.insert("payload".into(), redact(payload));
        stream.push(Value::Object(event));
    }

    /// Up to `limit` events of `session_id` after `after`.
    pub(crate) fn query(&self, session_id: &str, after: u64, limit: usize) -> Vec<Value> {
        let stream = self.streams.get(session_id).map_or(&[][..], Vec::as_slice);
        let start = stream
            .partition_point(|e| e.get("sequence").and_then(Value::as_u64).unwrap_or(0) <= after);
        stream[start..].iter().take(limit).cloned().collect()
    }

    /// Deletes `session_id`'s log: `(deleted, retained)` event counts.
    pub(crate) fn delete(&mut self, session_id: &str) -> (u64, u64) {
        let deleted = self.streams.remove(session_id).map_or(0, |s| s.len());
        let retained: usize = self.streams.values().map(Vec::len).sum();
        (deleted as u64, retained as u64)
    }
}

/// An object of the entries that have a value: optionals that are absent
/// are left out, as upstream leaves them out.
pub(crate) fn object(entries: impl IntoIterator<Item = (&'static str, Option<Value>)>) -> Value {
    Value::Object(
        entries
            .into_iter()
            .filter_map(|(key, value)| value.map(|v| (key.to_owned(), v)))
            .collect(),
    )
}
