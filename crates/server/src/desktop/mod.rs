//! The desktops the rules act on, each a room of its own.
//!
//! Every desktop answers the same four questions (observe, act, revalidate,
//! check) through [`crate::DesktopBackend`], and says honestly where it
//! cannot. The rules engine is the same over all of them.
//!
//! - [`simulated`]: deterministic, in memory, the embedded default of the
//!   examples and tests, and the only desktop whose server can be made to
//!   lie (its [`simulated::Faults`]);
//! - `x11` (feature `x11`): a real X11 display, through the X protocol and
//!   XTEST;
//! - `atspi` (feature `atspi`): the accessibility layer of the Linux
//!   desktops, applications and their elements over AT-SPI2 (D-Bus), which
//!   the X11 and Wayland desktops use for element observation and actions;
//! - `wayland` (feature `wayland`): a Wayland compositor's desktop, through
//!   the wlroots protocols (screencopy, foreign toplevels, the virtual
//!   keyboard and pointer, data control) and, for the layout, sway's IPC.

#[cfg(feature = "atspi")]
pub mod atspi;
pub mod deadline;
#[cfg(any(feature = "x11", feature = "wayland"))]
pub mod files;
#[cfg(any(feature = "x11", feature = "wayland"))]
pub mod keys;
#[cfg(any(feature = "x11", feature = "wayland"))]
pub(crate) mod notes;
#[cfg(any(feature = "x11", feature = "wayland"))]
pub(crate) mod real;
pub mod simulated;
#[cfg(feature = "wayland")]
pub mod wayland;
#[cfg(feature = "x11")]
pub mod x11;
