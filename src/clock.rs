//! Time, read through a trait so tests move it instead of sleeping.
//!
//! Every expiry check in the chain asks the `Session`'s clock. Wire timestamps
//! are RFC 3339; one that does not parse is an error, never "no expiry".

use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

use crate::error::ComputerUseError;

/// A source of the current time.
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> OffsetDateTime;

    /// The current instant in nanoseconds since the Unix epoch: the form the
    /// chain compares expiries in, since it reads the clock at every stage.
    /// The default derives it from [`Clock::now`]; override it only with the
    /// same instant read more cheaply.
    fn now_unix_nanos(&self) -> i128 {
        self.now().unix_timestamp_nanos()
    }
}

/// The operating system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }

    fn now_unix_nanos(&self) -> i128 {
        // The system time without building a calendar date from it.
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(after) => i128::try_from(after.as_nanos()).unwrap_or(i128::MAX),
            Err(before) => i128::try_from(before.duration().as_nanos()).map_or(i128::MIN, |n| -n),
        }
    }
}

/// A clock that only moves when told to. Clones share one instant.
///
/// ```
/// use adk_computer_use::clock::{Clock, ManualClock};
/// use time::{Duration, macros::datetime};
///
/// let clock = ManualClock::new(datetime!(2026-07-13 10:00 UTC));
/// clock.advance(Duration::seconds(31));
/// assert_eq!(clock.now(), datetime!(2026-07-13 10:00:31 UTC));
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<Mutex<OffsetDateTime>>,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: OffsetDateTime) -> Self {
        Self {
            now: Arc::new(Mutex::new(start)),
        }
    }

    /// Moves the clock forward (or back, with a negative duration).
    pub fn advance(&self, by: Duration) {
        let mut now = self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *now += by;
    }

    /// Puts the clock at `instant`.
    pub fn set(&self, instant: OffsetDateTime) {
        *self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = instant;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> OffsetDateTime {
        *self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> OffsetDateTime {
        (**self).now()
    }

    fn now_unix_nanos(&self) -> i128 {
        (**self).now_unix_nanos()
    }
}

/// Parses an RFC 3339 timestamp from `object.field`.
///
/// An unparseable value is [`ComputerUseError::InvalidField`] naming the field.
pub fn parse_rfc3339(
    object: &'static str,
    field: &'static str,
    value: &str,
) -> Result<OffsetDateTime, ComputerUseError> {
    OffsetDateTime::parse(value, &Rfc3339).map_err(|err| {
        ComputerUseError::invalid(
            object,
            field,
            "an RFC 3339 timestamp",
            format!("{value:?} ({err})"),
        )
    })
}

/// Parses an RFC 3339 timestamp from `object.field` into nanoseconds since
/// the Unix epoch (see [`Clock::now_unix_nanos`]).
pub(crate) fn parse_unix_nanos(
    object: &'static str,
    field: &'static str,
    value: &str,
) -> Result<i128, ComputerUseError> {
    parse_rfc3339(object, field, value).map(OffsetDateTime::unix_timestamp_nanos)
}

/// Formats an instant as RFC 3339 (for wire fields and messages).
///
/// Instants outside what RFC 3339 can write (years beyond 9999) are refused.
pub fn format_rfc3339(instant: OffsetDateTime) -> Result<String, ComputerUseError> {
    instant
        .format(&Rfc3339)
        .map_err(|err| ComputerUseError::InvalidRequest {
            field: "timestamp".into(),
            message: format!("cannot be written as RFC 3339: {err}"),
        })
}

/// Writes an instant for a human message; never fails.
pub(crate) fn display(instant: OffsetDateTime) -> String {
    format_rfc3339(instant).unwrap_or_else(|_| instant.to_string())
}

/// [`display`] for nanoseconds since the Unix epoch.
pub(crate) fn display_nanos(nanos: i128) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .map_or_else(|_| format!("{nanos} ns after the Unix epoch"), display)
}
