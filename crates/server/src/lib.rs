//! `computer-use-server`: a `computer-use-mcp` v8 server, upstream's rules
//! over a desktop of your choice.
//!
//! This crate is the peer of the `adk-computer-use` library, not part of
//! it: an agent embeds the library and speaks to this server (or to
//! upstream's own) over MCP. It serves upstream's v8 tool surface and
//! follows upstream's server rules wherever they show on the wire
//! ([`engine`]), over a [`DesktopBackend`] ([`desktop`]): the deterministic
//! [`desktop::simulated`] desktop, or a real X11 display (feature `x11`).
//!
//! Serve it with the `computer-use-server` binary (`--desktop simulated` or
//! `--desktop x11`), over stdio or, with `--listen`, over TCP to
//! credentialed clients; or build a [`Server`] and serve it yourself. The
//! test-support crate runs it inside a test's own process.
//!
//! Fault injection, which makes the server lie so tests can prove every lie
//! is caught, exists only in the simulated desktop: a server over a real
//! display cannot be given a fault (see [`desktop::simulated::Faults`]).

mod config;
pub mod desktop;
pub mod engine;

pub use config::{Config, DEFAULT_CREDENTIAL_APPS, DEFAULT_MAX_TARGET_AGE_MS};
pub use desktop::simulated::{
    App, CLIPBOARD_APP, CLIPBOARD_LABEL, CLIPBOARD_ROLE, CLIPBOARD_WINDOW, Element, Fault, Faults,
    SimulatedBackend, SimulatedDesktop, Window,
};
pub use engine::{
    AGENT_NOT_OWNER, APPROVER_CREDENTIAL_REQUIRED, Answer, ApplyError, BOUNDS_TOLERANCE_PX,
    CREDENTIAL_CAPABILITY, ConnectionService, Credentials, DEFAULT_AGENT, DesktopBackend,
    EffectCheck, Frame, HOST_CREDENTIAL_REQUIRED, PointerAndFocus, Refusal, Revalidation, Role,
    Server, State,
};
