//! The tool calls that change the server's parts, each an `impl State`
//! in the file of the part it belongs to (control: the lease and the
//! revocations; grants; history; onboarding; reservation; session).
//!
//! They live apart from the parts' data so that the rooms go one way: the
//! state holds the parts and imports their data, these handlers import
//! the state, and no part imports the state back.

mod control;
mod grants;
mod history;
mod onboarding;
mod reservation;
mod session;
