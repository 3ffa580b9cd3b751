//! Floats that round-trip: an integral value is written as an integer, so a
//! `confidence: 1` that came in goes out as `1`, not `1.0`.

use serde::{Deserialize, Deserializer, Serializer};

const EXACT_INTEGER_LIMIT: f64 = 9_007_199_254_740_992.0; // 2^53

pub(crate) fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    if value.is_finite() && value.fract() == 0.0 && value.abs() < EXACT_INTEGER_LIMIT {
        // Exact: |value| < 2^53 and integral, so the cast loses nothing.
        #[allow(clippy::cast_possible_truncation)]
        serializer.serialize_i64(*value as i64)
    } else {
        serializer.serialize_f64(*value)
    }
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    f64::deserialize(deserializer)
}
