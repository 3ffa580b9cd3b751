//! Time, read through a trait so tests move it instead of sleeping.
//!
//! Every expiry check in the chain asks the `Session`'s clock. Wire timestamps
//! are RFC 3339; one that does not parse is an error, never "no expiry".

use std::sync::{Arc, Mutex};

use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

use crate::error::ComputerUseError;

/// A source of the current time.
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> OffsetDateTime;
}

/// The operating system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
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
