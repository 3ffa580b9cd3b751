//! The authorizer binds scopes to the host-verified identity; the manual
//! clock moves only when told; the system clock never calls a passed
//! deadline ahead.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use::ComputerUseError;
use adk_computer_use::auth::{Scope, ScopeAuthorizer, VerifiedIdentity};
use adk_computer_use::clock::{COARSE_MARGIN, Clock, ManualClock, SystemClock, parse_rfc3339};
use adk_computer_use::contracts::ExecutionMode;
use time::macros::datetime;
use time::{Duration, OffsetDateTime};

fn authorizer(scopes: &[&str]) -> ScopeAuthorizer {
    ScopeAuthorizer::new(
        VerifiedIdentity::new("alice", "acme").unwrap(),
        scopes.iter().copied(),
    )
    .unwrap()
}

#[test]
fn each_mode_needs_its_own_scope() {
    let plan_only = authorizer(&["computer:plan"]);
    plan_only
        .authorize("alice", "acme", ExecutionMode::Shadow)
        .unwrap();
    assert!(
        plan_only
            .authorize("alice", "acme", ExecutionMode::Background)
            .is_err()
    );

    let background = authorizer(&["computer:plan", "computer:execute:background"]);
    background
        .authorize("alice", "acme", ExecutionMode::Background)
        .unwrap();
    let err = background
        .authorize("alice", "acme", ExecutionMode::Foreground)
        .unwrap_err();
    assert!(
        matches!(&err, ComputerUseError::Unauthorized { required, .. } if required == "computer:execute:foreground")
    );

    let foreground = authorizer(&["computer:execute:foreground"]);
    foreground
        .authorize("alice", "acme", ExecutionMode::Foreground)
        .unwrap();
    assert!(
        foreground.holds(Scope::ExecuteForeground) && !foreground.holds(Scope::ExecuteBackground)
    );
}

#[test]
fn another_principal_or_tenant_is_refused() {
    let all = authorizer(&[
        "computer:plan",
        "computer:execute:background",
        "computer:execute:foreground",
    ]);
    let err = all
        .authorize("mallory", "acme", ExecutionMode::Shadow)
        .unwrap_err();
    assert!(err.to_string().contains("mallory"));
    let err = all
        .authorize("alice", "evil-corp", ExecutionMode::Shadow)
        .unwrap_err();
    assert!(err.to_string().contains("evil-corp"));
}

#[test]
fn unknown_scopes_and_empty_identities_are_refused() {
    let identity = VerifiedIdentity::new("alice", "acme").unwrap();
    assert!(ScopeAuthorizer::new(identity, ["computer:everything"]).is_err());
    assert!(VerifiedIdentity::new("", "acme").is_err());
    assert!(VerifiedIdentity::new("alice", "").is_err());
}

#[test]
fn manual_clock_moves_only_when_told_and_clones_share_it() {
    let clock = ManualClock::new(datetime!(2026-07-13 10:00 UTC));
    let shared = clock.clone();
    assert_eq!(clock.now(), shared.now());
    clock.advance(Duration::seconds(5));
    assert_eq!(shared.now(), datetime!(2026-07-13 10:00:05 UTC));
    shared.set(datetime!(2027-01-01 0:00 UTC));
    assert_eq!(clock.now(), datetime!(2027-01-01 0:00 UTC));
}

#[test]
fn rfc3339_parsing_names_the_field() {
    assert_eq!(
        parse_rfc3339("X", "at", "2026-07-13T10:00:00.500Z").unwrap(),
        datetime!(2026-07-13 10:00:00.5 UTC)
    );
    let err = parse_rfc3339("X", "at", "13/07/2026").unwrap_err();
    assert_eq!(err.field(), Some("at"));
}

#[test]
fn manual_clock_answers_is_before_at_its_instant() {
    let clock = ManualClock::new(datetime!(2026-07-13 10:00 UTC));
    let at = datetime!(2026-07-13 10:00 UTC).unix_timestamp_nanos();
    assert!(clock.is_before(at + 1));
    assert!(
        !clock.is_before(at),
        "a deadline is passed at its own instant"
    );
    clock.advance(Duration::nanoseconds(1));
    assert!(!clock.is_before(at + 1));
}

fn precise_now() -> i128 {
    OffsetDateTime::now_utc().unix_timestamp_nanos()
}

/// Deadlines from a second in the past to a second ahead, densest within the
/// coarse margin, where the system clock must read precisely. Each answer is
/// checked against precise reads taken just before and just after it, which
/// bound the instant it was given at: "ahead" must have been true before the
/// call, "passed" must be true after it. Neither assertion depends on how
/// fast the machine is.
#[test]
fn the_system_clock_never_calls_a_passed_deadline_ahead() {
    let clock = SystemClock;
    let margin = COARSE_MARGIN.whole_nanoseconds();
    let mut offsets: Vec<i128> = (-200..=200).map(|step| step * margin / 100).collect();
    offsets.extend([-1_000_000_000, -1, 0, 1, 1_000_000_000]);
    let (mut ahead, mut passed) = (0, 0);
    for _ in 0..20 {
        for &offset in &offsets {
            let deadline = precise_now() + offset;
            let before = precise_now();
            let answer = clock.is_before(deadline);
            let after = precise_now();
            if answer {
                ahead += 1;
                assert!(
                    before < deadline,
                    "called ahead {} ns after it passed",
                    before - deadline
                );
            } else {
                passed += 1;
                assert!(
                    after >= deadline,
                    "called passed {} ns before it",
                    deadline - after
                );
            }
        }
    }
    // Both answers were given, so both assertions were exercised.
    assert!(ahead > 0 && passed > 0, "ahead {ahead}, passed {passed}");
}
