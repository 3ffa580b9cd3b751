//! Time, read through a trait so tests move it instead of sleeping.
//!
//! Every expiry check in the chain asks the `Session`'s clock, at every
//! stage, whether a deadline is still ahead. Wire timestamps are RFC 3339;
//! one that does not parse is an error, never "no expiry".
//!
//! The system clock answers that question from the kernel's coarse clock
//! when the deadline is far away, and reads the precise clock only near it:
//! a chain asks about seven times per action, and the precise read is most of
//! what those questions would otherwise cost. The coarse clock lags the true
//! time by at most one scheduler tick (1–10 ms); it is trusted only with a
//! margin of [`COARSE_MARGIN`], so it can answer "still ahead" early but
//! never late.

use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

use crate::error::ComputerUseError;

/// A source of the current time.
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> OffsetDateTime;

    /// Whether the current instant is strictly before `deadline`, given in
    /// nanoseconds since the Unix epoch. The default compares [`Clock::now`].
    /// An implementation may answer from a cheaper source, provided it never
    /// answers `true` once the deadline has passed.
    fn is_before(&self, deadline: i128) -> bool {
        self.now().unix_timestamp_nanos() < deadline
    }
}

/// How far ahead of the coarse clock a deadline must be for
/// [`SystemClock`] to call it ahead without a precise read: five ticks of the
/// slowest common scheduler (100 Hz), many times the coarse clock's lag.
pub const COARSE_MARGIN: Duration = Duration::milliseconds(50);

/// A clock stopped at one instant: how a validator given an explicit time
/// asks its questions.
pub(crate) struct FixedClock(pub(crate) OffsetDateTime);

impl Clock for FixedClock {
    fn now(&self) -> OffsetDateTime {
        self.0
    }
}

/// The operating system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }

    fn is_before(&self, deadline: i128) -> bool {
        let margin = COARSE_MARGIN.whole_nanoseconds();
        if coarse_unix_nanos().is_some_and(|coarse| coarse.saturating_add(margin) < deadline) {
            return true;
        }
        precise_unix_nanos() < deadline
    }
}

/// The kernel's coarse wall clock (the time of the last tick), where there is one.
#[cfg(target_os = "linux")]
fn coarse_unix_nanos() -> Option<i128> {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse);
    Some(i128::from(now.tv_sec) * 1_000_000_000 + i128::from(now.tv_nsec))
}

#[cfg(not(target_os = "linux"))]
fn coarse_unix_nanos() -> Option<i128> {
    None
}

/// The system time, without building a calendar date from it.
fn precise_unix_nanos() -> i128 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(after) => i128::try_from(after.as_nanos()).unwrap_or(i128::MAX),
        Err(before) => i128::try_from(before.duration().as_nanos()).map_or(i128::MIN, |n| -n),
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

    fn is_before(&self, deadline: i128) -> bool {
        (**self).is_before(deadline)
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
        .map_err(|err| ComputerUseError::InvalidField {
            object: "Timestamp",
            field: "instant",
            expected: "an instant RFC 3339 can write (years 0 to 9999)".into(),
            actual: format!("{instant} ({err})"),
        })
}

/// Writes an instant for a human message; never fails.
pub(crate) fn display(instant: OffsetDateTime) -> String {
    format_rfc3339(instant).unwrap_or_else(|_| instant.to_string())
}
