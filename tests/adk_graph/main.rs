//! The ADK-Rust face: upstream's reference-graph scenarios
//! (adk-computer-use 2.3.0, `tests/reference_graph.rs`) over this crate's
//! chain, with the scripted runtime of `common` in place of upstream's
//! fake. Each test keeps upstream's assertions on state keys, routes,
//! interrupts and call counts; where ours differs on purpose, the test
//! says which assertion changed and why.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;

mod approvals;
mod failures;
mod page;
mod page_review;
mod review;
mod stream;
mod support;
mod tool;
