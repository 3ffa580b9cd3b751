//! The authorizer binds scopes to the host-verified identity; the manual
//! clock moves only when told.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use::ComputerUseError;
use adk_computer_use::auth::{Scope, ScopeAuthorizer, VerifiedIdentity};
use adk_computer_use::clock::{Clock, ManualClock, parse_rfc3339};
use adk_computer_use::contracts::ExecutionMode;
use time::Duration;
use time::macros::datetime;

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
