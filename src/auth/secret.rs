//! Secrets a host hands out and checks: credentials for a shared simulator,
//! the approval page's link. One place draws them from the kernel and one
//! compares them, in time that depends on neither value.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::ComputerUseError;

/// 32 random bytes from the kernel (`/dev/urandom`), as 64 hex digits.
pub fn random_token() -> Result<String, ComputerUseError> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut source| source.read_exact(&mut bytes))
        .map_err(|err| ComputerUseError::Storage {
            operation: "draw a secret".into(),
            path: "/dev/urandom".into(),
            message: err.to_string(),
        })?;
    Ok(hex::encode(bytes))
}

/// Whether `given` is `expected`: their SHA-256 digests are compared in
/// constant time, so neither the content nor the length of the secret
/// shows in how long the answer takes.
pub fn same_secret(given: &str, expected: &str) -> bool {
    let (a, b) = (
        Sha256::digest(given.as_bytes()),
        Sha256::digest(expected.as_bytes()),
    );
    a.as_slice().ct_eq(b.as_slice()).into()
}
