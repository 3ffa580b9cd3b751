//! Wire timestamps, parsed once when they are decoded.
//!
//! An expiry is read many times along a chain (at preview, approval,
//! reservation, lease and again just before the mutation). Parsing the RFC
//! 3339 text each time would cost the same work again and again, so the text
//! is parsed once, when the value is built, and kept beside the instant. The
//! text is what goes back on the wire, unchanged. A text that does not parse
//! is kept too, without an instant: it decodes, so the binding check can
//! name the field it came in, and it is refused there, never taken as "no
//! expiry".

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::ComputerUseError;

/// An RFC 3339 timestamp as it came over the wire, with its instant.
///
/// ```
/// use adk_computer_use::contracts::WireTime;
///
/// let at = WireTime::from("2026-07-13T10:00:00Z");
/// assert_eq!(at.as_str(), "2026-07-13T10:00:00Z");
/// assert_eq!(at.unix_nanos(), Some(1_783_936_800_000_000_000));
/// assert_eq!(WireTime::from("soon").unix_nanos(), None);
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct WireTime {
    text: String,
    // The instant as whole seconds and the nanoseconds past them, with
    // `UNPARSED` in `nanos` when the text is not a timestamp. Kept this
    // compact on purpose: an envelope holds two of these, and a larger
    // envelope no longer fits the allocator's small-size cache.
    secs: i64,
    nanos: u32,
}

/// `nanos` of a text that did not parse (a real value is below 10^9).
const UNPARSED: u32 = u32::MAX;

impl WireTime {
    /// The text as it is written on the wire.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The instant in nanoseconds since the Unix epoch, or `None` when the
    /// text is not an RFC 3339 timestamp.
    pub fn unix_nanos(&self) -> Option<i128> {
        if self.nanos == UNPARSED {
            None
        } else {
            Some(i128::from(self.secs) * 1_000_000_000 + i128::from(self.nanos))
        }
    }

    /// The instant, or [`ComputerUseError::InvalidField`] naming
    /// `object.field` when the text is not an RFC 3339 timestamp.
    pub fn instant(
        &self,
        object: &'static str,
        field: &'static str,
    ) -> Result<i128, ComputerUseError> {
        match self.unix_nanos() {
            Some(nanos) => Ok(nanos),
            // Parsed again only to say why it failed.
            None => crate::clock::parse_rfc3339(object, field, &self.text)
                .map(OffsetDateTime::unix_timestamp_nanos),
        }
    }
}

impl From<String> for WireTime {
    fn from(text: String) -> Self {
        match OffsetDateTime::parse(&text, &Rfc3339) {
            Ok(at) => Self {
                text,
                secs: at.unix_timestamp(),
                nanos: at.nanosecond(),
            },
            Err(_) => Self {
                text,
                secs: 0,
                nanos: UNPARSED,
            },
        }
    }
}

impl From<&str> for WireTime {
    fn from(text: &str) -> Self {
        Self::from(text.to_owned())
    }
}

impl Deref for WireTime {
    type Target = str;

    fn deref(&self) -> &str {
        &self.text
    }
}

impl PartialEq<str> for WireTime {
    fn eq(&self, other: &str) -> bool {
        self.text == other
    }
}

impl PartialEq<&str> for WireTime {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

impl fmt::Debug for WireTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text, f)
    }
}

impl fmt::Display for WireTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for WireTime {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for WireTime {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
    }
}
