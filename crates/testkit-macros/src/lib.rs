//! `#[needs(...)]`: a test that needs an outside server is reported
//! *ignored*, with the reason, when this build cannot reach that server, and
//! never as passed.
//!
//! Rust's test harness decides "ignored" at compile time, so the decision is
//! made where the build can see the environment: this crate's build script
//! turns the variables into cfgs of this crate, and the attribute adds
//! `#[ignore = "..."]` to the test when one is missing. The library and the
//! server crates have no build script of their own.
//!
//! ```ignore
//! #[tokio::test]
//! #[adk_computer_use_testkit::needs(postgres)]
//! async fn checkpoints_survive_a_restart() { /* ... */ }
//! ```

use proc_macro::{Delimiter, TokenStream, TokenTree};

/// One outside server: its name in `#[needs(...)]`, whether this build
/// reaches it, and what to do when it does not.
struct Outside {
    name: &'static str,
    reached: bool,
    how: &'static str,
}

const OUTSIDE: [Outside; 6] = [
    Outside {
        name: "postgres",
        reached: cfg!(has_postgres),
        how: "a PostgreSQL server: set ADK_POSTGRES_URL",
    },
    Outside {
        name: "upstream",
        reached: cfg!(has_upstream),
        how: "upstream's v8 server: set ADK_UPSTREAM_SERVER to its serve.sh",
    },
    Outside {
        name: "display",
        reached: cfg!(has_display),
        how: "an X server: set DISPLAY",
    },
    Outside {
        name: "accessibility",
        reached: cfg!(has_accessibility),
        how: "a D-Bus session with the accessibility bus: set DBUS_SESSION_BUS_ADDRESS",
    },
    Outside {
        name: "compositor",
        reached: cfg!(has_compositor),
        how: "a Wayland compositor (sway): set ADK_WAYLAND_DISPLAY to its socket and ADK_SWAYSOCK to its IPC socket",
    },
    Outside {
        name: "browser",
        reached: cfg!(has_browser),
        how: "chromium and chromedriver on the PATH",
    },
];

/// Marks a test as needing outside servers (`postgres`, `upstream`,
/// `display`, `accessibility`, `compositor`, `browser`, comma-separated): when this build reaches none or
/// only some of them, the test is ignored, and the reason names each one
/// missing and how to provide it (`.ci/run` provides them all).
#[proc_macro_attribute]
pub fn needs(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut missing = Vec::new();
    if let Err(message) = collect(attr, &mut missing) {
        return error(&message);
    }
    if missing.is_empty() {
        return item;
    }
    let reason = format!("needs {} (.ci/run provides it)", missing.join("; and "));
    let mut out: TokenStream = match format!("#[ignore = {reason:?}]").parse() {
        Ok(stream) => stream,
        Err(err) => return error(&format!("#[needs] could not write its reason: {err}")),
    };
    out.extend(item);
    out
}

/// Reads the names in `attr` (looking inside the invisible groups a
/// `macro_rules!` expansion leaves), noting how to provide each one this
/// build does not reach.
fn collect(attr: TokenStream, missing: &mut Vec<&'static str>) -> Result<(), String> {
    for token in attr {
        match token {
            TokenTree::Ident(ident) => {
                let name = ident.to_string();
                match OUTSIDE.iter().find(|o| o.name == name) {
                    Some(outside) if !outside.reached => missing.push(outside.how),
                    Some(_) => {}
                    None => {
                        return Err(format!(
                            "#[needs] expected one of postgres, upstream, display, accessibility, compositor, browser, got `{name}`"
                        ));
                    }
                }
            }
            TokenTree::Punct(p) if p.as_char() == ',' => {}
            TokenTree::Group(g) if g.delimiter() == Delimiter::None => {
                collect(g.stream(), missing)?
            }
            other => {
                return Err(format!(
                    "#[needs] expected names separated by commas, got `{other}`"
                ));
            }
        }
    }
    Ok(())
}

fn error(message: &str) -> TokenStream {
    format!("compile_error!({message:?});")
        .parse()
        .unwrap_or_default()
}
