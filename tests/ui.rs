//! Compile-time proofs: illegal orderings of the chain, and every way around
//! it, do not compile.
//!
//! The `.stderr` snapshots are produced by rustc 1.95, the toolchain this
//! crate pins (`rust-version`); diagnostics change between releases. On any
//! other compiler this test fails loudly rather than skipping in silence:
//! set `ADK_UI_TESTS=skip` to skip it knowingly (the key proofs are also
//! `compile_fail` doctests in `runtime::proof` and `protocol::attacks`, which
//! run on any stable compiler). To regenerate the snapshots after a
//! deliberate change, run `TRYBUILD=overwrite cargo test --all-features
//! --test ui` and review the diff.

const PINNED: &str = "rustc 1.95.";

fn rustc_version() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_else(|err| format!("(rustc --version failed: {err})"))
}

#[test]
fn illegal_orderings_do_not_compile() {
    let version = rustc_version();
    if !version.starts_with(PINNED) {
        if std::env::var("ADK_UI_TESTS").as_deref() == Ok("skip") {
            eprintln!("ADK_UI_TESTS=skip: not checking the ui snapshots on {version}");
            return;
        }
        panic!(
            "the ui snapshots are for {PINNED}x, this is {version}; install rustc 1.95 or set ADK_UI_TESTS=skip to skip them knowingly"
        );
    }
    let cases = trybuild::TestCases::new();
    cases.pass("ui-tests/pass/*.rs");
    cases.compile_fail("ui-tests/fail/*.rs");
    // The sealed store trait's refusal lists every store this build has,
    // and the PostgreSQL one exists only with its feature.
    if cfg!(feature = "postgres") {
        cases.compile_fail("ui-tests/fail-postgres/*.rs");
    }
    // The graph face: no node decodes a stage or a proof from the state.
    if cfg!(all(feature = "adk", feature = "mcp")) {
        cases.compile_fail("ui-tests/fail-adk/*.rs");
    }
}
