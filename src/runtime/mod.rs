//! The runtime boundary.

pub mod binding;
