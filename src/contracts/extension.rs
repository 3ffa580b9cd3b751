//! The two keys this crate and its desktop server add to MCP's
//! `capabilities.experimental` map. Both sides name them from here, so the
//! client and the server cannot drift apart.

/// In the client's `initialize` request: the credential a connection
/// presents (`{"token": ...}`) to a shared server.
pub const CREDENTIAL_CAPABILITY: &str = "adk/credential";

/// In the server's `initialize` answer: the effects it checks after an
/// action, by tool (postconditions without their digest).
pub const EFFECT_CHECKS_CAPABILITY: &str = "adk/effect-checks";
