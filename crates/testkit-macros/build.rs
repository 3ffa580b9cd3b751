//! Notes which outside servers this build can reach, as cfgs of this macro
//! crate: `has_postgres` when `ADK_POSTGRES_URL` is set, `has_upstream`
//! when `ADK_UPSTREAM_SERVER` is, `has_display` when `DISPLAY` is,
//! `has_accessibility` when `DBUS_SESSION_BUS_ADDRESS` is (a session bus,
//! through which the accessibility bus is found or started),
//! `has_compositor` when `ADK_WAYLAND_DISPLAY` is (a Wayland compositor's
//! socket, with sway's IPC socket in `ADK_SWAYSOCK`),
//! `has_browser` when `chromium` and `chromedriver` are on the `PATH`.
//!
//! Only this test-support crate reads them: the library, the server and the
//! approvals crates have no build script. A change of any variable rebuilds
//! this crate, and with it every test that uses `#[needs(...)]`.

fn main() {
    for (cfg, variable) in [
        ("has_postgres", "ADK_POSTGRES_URL"),
        ("has_upstream", "ADK_UPSTREAM_SERVER"),
        ("has_display", "DISPLAY"),
        ("has_accessibility", "DBUS_SESSION_BUS_ADDRESS"),
        ("has_compositor", "ADK_WAYLAND_DISPLAY"),
    ] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        println!("cargo::rerun-if-env-changed={variable}");
        if std::env::var_os(variable).is_some_and(|value| !value.is_empty()) {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
    println!("cargo::rustc-check-cfg=cfg(has_browser)");
    println!("cargo::rerun-if-env-changed=PATH");
    let on_path = |program: &str| {
        std::env::var_os("PATH").is_some_and(|paths| {
            std::env::split_paths(&paths).any(|dir| dir.join(program).is_file())
        })
    };
    if on_path("chromium") && on_path("chromedriver") {
        println!("cargo::rustc-cfg=has_browser");
    }
}
