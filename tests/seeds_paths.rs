//! Code written from the upstream README compiles here: the response
//! validators are reachable at the path it uses
//! (`adk_computer_use::runtime::binding`), and they are the very items of
//! `adk_computer_use::binding`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use::runtime::binding::{
    validate_envelope_freshness, validate_lease, validate_receipt, validate_reservation,
};
use std::any::type_name_of_val;

#[test]
fn the_validators_answer_at_the_seeds_path() {
    let pairs = [
        (
            type_name_of_val(&validate_lease),
            type_name_of_val(&adk_computer_use::binding::validate_lease),
        ),
        (
            type_name_of_val(&validate_reservation),
            type_name_of_val(&adk_computer_use::binding::validate_reservation),
        ),
        (
            type_name_of_val(&validate_receipt),
            type_name_of_val(&adk_computer_use::binding::validate_receipt),
        ),
        (
            type_name_of_val(&validate_envelope_freshness),
            type_name_of_val(&adk_computer_use::binding::validate_envelope_freshness),
        ),
    ];
    for (seeds, ours) in pairs {
        assert_eq!(seeds, ours, "one item under two paths");
        assert!(seeds.starts_with("adk_computer_use::binding::"), "{seeds}");
    }
}
