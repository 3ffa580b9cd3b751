//! Tells the test suites which outside servers this build can reach, so a
//! suite that needs one it cannot reach is reported as ignored (with the
//! reason), never as passed: `adk_has_postgres` when `ADK_POSTGRES_URL` is
//! set, `adk_has_upstream` when `ADK_UPSTREAM_SERVER` is, `adk_has_display`
//! when `DISPLAY` is, `adk_has_browser` when `chromium` and `chromedriver`
//! are on the `PATH`. The library itself never reads these.

fn main() {
    for (cfg, variable) in [
        ("adk_has_postgres", "ADK_POSTGRES_URL"),
        ("adk_has_upstream", "ADK_UPSTREAM_SERVER"),
        ("adk_has_display", "DISPLAY"),
    ] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        println!("cargo::rerun-if-env-changed={variable}");
        if std::env::var_os(variable).is_some_and(|value| !value.is_empty()) {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
    println!("cargo::rustc-check-cfg=cfg(adk_has_browser)");
    println!("cargo::rerun-if-env-changed=PATH");
    let on_path = |program: &str| {
        std::env::var_os("PATH").is_some_and(|paths| {
            std::env::split_paths(&paths).any(|dir| dir.join(program).is_file())
        })
    };
    if on_path("chromium") && on_path("chromedriver") {
        println!("cargo::rustc-cfg=adk_has_browser");
    }
}
