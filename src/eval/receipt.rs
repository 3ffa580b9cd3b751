//! The tamper-evident evaluation receipt.
//!
//! A receipt states what a test run proved and seals it: `receiptDigest` is the
//! `sha256:` digest of the receipt's canonical JSON with `receiptDigest` set to
//! the empty string. Changing any claim, command, assertion or source breaks
//! the seal, and `verify` re-checks every claim as well as the seal.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::ComputerUseError;
use crate::digest::{canonical_json_of, is_prefixed_sha256, sha256_prefixed};

/// The protocol name every receipt carries.
pub const RECEIPT_PROTOCOL: &str = "adk-rust-computer-use-v8-evaluation";
const OBJECT: &str = "AdkEvaluationReceipt";

/// What the run claims.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EvaluationClaims {
    /// Every test passed.
    pub tests_passed: bool,
    /// Authorization was bound to a verified identity.
    pub auth_bound: bool,
    /// Multimodal (image) evidence was carried.
    pub multimodal_evidence: bool,
    /// Mutations that ran more than once (must be 0).
    pub duplicate_mutations: u64,
    /// Crash points exercised (at least 2).
    pub crash_points_covered: u64,
    /// Tests run (at least 1).
    pub test_count: u64,
}

/// One source file and its digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EvaluationSource {
    /// The path.
    pub path: String,
    /// `sha256:` digest of its content.
    pub digest: String,
}

/// A receipt with the fields of `adk-evaluation-receipt.schema.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdkEvaluationReceipt {
    /// Always 1.
    pub schema_version: u32,
    /// Always [`RECEIPT_PROTOCOL`].
    pub protocol: String,
    /// The version evaluated.
    pub subject_version: String,
    /// When it was generated (RFC 3339).
    pub generated_at: String,
    /// The commands run (at least 2).
    pub commands: Vec<String>,
    /// The assertions proved (unique, at least 1).
    pub assertions: Vec<String>,
    /// What the run claims.
    pub claims: EvaluationClaims,
    /// The sources evaluated.
    pub sources: Vec<EvaluationSource>,
    /// Digest over the sources.
    pub source_digest: String,
    /// Digest over the output.
    pub output_digest: String,
    /// The seal.
    pub receipt_digest: String,
}

fn claim(
    field: &'static str,
    holds: bool,
    expected: &str,
    actual: impl ToString,
) -> Result<(), ComputerUseError> {
    if holds {
        Ok(())
    } else {
        Err(ComputerUseError::invalid(
            OBJECT,
            field,
            expected,
            actual.to_string(),
        ))
    }
}

impl AdkEvaluationReceipt {
    /// The digest this receipt's content seals to.
    pub fn compute_digest(&self) -> Result<String, ComputerUseError> {
        let mut unsealed = self.clone();
        unsealed.receipt_digest = String::new();
        Ok(sha256_prefixed(canonical_json_of(&unsealed)?))
    }

    /// Writes the seal.
    pub fn seal(&mut self) -> Result<(), ComputerUseError> {
        self.receipt_digest = self.compute_digest()?;
        Ok(())
    }

    /// Re-checks every claim and the seal.
    pub fn verify(&self) -> Result<(), ComputerUseError> {
        claim(
            "schemaVersion",
            self.schema_version == 1,
            "1",
            self.schema_version,
        )?;
        claim(
            "protocol",
            self.protocol == RECEIPT_PROTOCOL,
            RECEIPT_PROTOCOL,
            &self.protocol,
        )?;
        claim(
            "subjectVersion",
            !self.subject_version.is_empty(),
            "a version",
            "\"\"",
        )?;
        crate::clock::parse_rfc3339(OBJECT, "generatedAt", &self.generated_at)?;
        claim(
            "commands",
            self.commands.len() >= 2,
            "at least two commands",
            self.commands.len(),
        )?;
        claim(
            "commands",
            self.commands.iter().all(|c| !c.is_empty()),
            "non-empty commands",
            "an empty command",
        )?;
        claim(
            "assertions",
            !self.assertions.is_empty(),
            "at least one assertion",
            0,
        )?;
        claim(
            "assertions",
            self.assertions.iter().all(|a| !a.is_empty()),
            "non-empty assertions",
            "an empty assertion",
        )?;
        let unique: HashSet<_> = self.assertions.iter().collect();
        claim(
            "assertions",
            unique.len() == self.assertions.len(),
            "unique assertions",
            "a repeated assertion",
        )?;
        let claims = &self.claims;
        claim(
            "claims.testsPassed",
            claims.tests_passed,
            "true",
            claims.tests_passed,
        )?;
        claim(
            "claims.authBound",
            claims.auth_bound,
            "true",
            claims.auth_bound,
        )?;
        claim(
            "claims.multimodalEvidence",
            claims.multimodal_evidence,
            "true",
            claims.multimodal_evidence,
        )?;
        claim(
            "claims.duplicateMutations",
            claims.duplicate_mutations == 0,
            "0",
            claims.duplicate_mutations,
        )?;
        claim(
            "claims.crashPointsCovered",
            claims.crash_points_covered >= 2,
            "at least 2",
            claims.crash_points_covered,
        )?;
        claim(
            "claims.testCount",
            claims.test_count >= 1,
            "at least 1",
            claims.test_count,
        )?;
        claim(
            "sources",
            !self.sources.is_empty(),
            "at least one source",
            0,
        )?;
        for source in &self.sources {
            claim(
                "sources.digest",
                is_prefixed_sha256(&source.digest),
                "a sha256: digest",
                &source.digest,
            )?;
        }
        for (field, digest) in [
            ("sourceDigest", &self.source_digest),
            ("outputDigest", &self.output_digest),
            ("receiptDigest", &self.receipt_digest),
        ] {
            claim(
                field,
                is_prefixed_sha256(digest),
                "a sha256: digest",
                digest,
            )?;
        }
        let expected = self.compute_digest()?;
        if expected != self.receipt_digest {
            return Err(ComputerUseError::Integrity {
                object: OBJECT,
                field: "receiptDigest",
                expected,
                actual: self.receipt_digest.clone(),
            });
        }
        Ok(())
    }
}
