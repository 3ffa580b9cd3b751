//! Compile-time proofs: illegal orderings of the chain do not compile.
//!
//! The `.stderr` snapshots are produced by rustc 1.95; on any other compiler
//! the test is skipped (diagnostics change between releases). To regenerate
//! them after a deliberate change, run
//! `TRYBUILD=overwrite cargo test --test ui` and review the diff.

fn rustc_is_1_95() -> bool {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).starts_with("rustc 1.95."))
        .unwrap_or(false)
}

#[test]
fn illegal_orderings_do_not_compile() {
    if !rustc_is_1_95() {
        eprintln!("skipping: the ui snapshots are for rustc 1.95");
        return;
    }
    let cases = trybuild::TestCases::new();
    cases.pass("ui-tests/pass/*.rs");
    cases.compile_fail("ui-tests/fail/*.rs");
}
