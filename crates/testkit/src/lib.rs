//! The one test-support place of `adk-computer-use`, for its tests,
//! examples and benchmarks (and the server's and approvals' own tests).
//!
//! Nothing here is part of the library an agent embeds, and nothing here is
//! trusted by it: the chain checks every answer these parts give exactly as
//! it checks a live server's.
//!
//! - [`answers`]: the answers a well-behaved runtime gives, bound to what the
//!   chain sent, for runtimes written by hand;
//! - [`spawn`]: the desktop server in the caller's own process, over an
//!   in-memory pipe;
//! - [`binary`]: the workspace's binaries (the server, the approvals command,
//!   the journal check) found for a test to run as child processes;
//! - [`child`]: the server as a child process and governed sessions over it;
//! - [`browser`]: headless Chromium over WebDriver, to click the approval
//!   page as a person would;
//! - [`needs`]: a test that needs an outside server (PostgreSQL, upstream's
//!   v8 server, a display, a browser) is reported ignored when the build
//!   cannot reach it.

pub mod answers;
pub mod binary;
pub mod browser;
pub mod child;
mod spawn;

pub use adk_computer_use_testkit_macros::needs;
pub use computer_use_server as server;
pub use spawn::{STATS_TOOL, connect, spawn, spawn_on, spawn_simulated};
