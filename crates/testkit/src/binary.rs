//! The workspace's binaries, for tests that run them as child processes.
//!
//! A test of one package cannot name another package's binary through
//! `CARGO_BIN_EXE_*`, and a test must not run cargo itself (the build
//! directory is locked while tests run). The README's test command builds
//! every workspace member, so each binary sits beside the test executables,
//! in the profile directory; this finds it there, or says how to build it.

use std::path::{Path, PathBuf};

/// The desktop server (`computer-use-server`).
pub const SERVER: &str = "computer-use-server";
/// The approvals command and page (`computer-use-approvals`).
pub const APPROVALS: &str = "computer-use-approvals";
/// The journal check (`computer-use-journal`).
pub const JOURNAL: &str = "computer-use-journal";

/// The path of the workspace binary `name` built with the current profile.
///
/// # Panics
///
/// When the binary has not been built, or is older than a source file it
/// is built from (a test run of one package does not rebuild another's
/// binary), with the command that builds it: a test that needs it cannot go
/// on, and says why, rather than run against an old build.
pub fn path(name: &str) -> PathBuf {
    match find(name) {
        Some(path) => {
            if let Some(newer) = newer_source(&path, name) {
                panic!(
                    "the workspace binary `{name}` is older than {}: rebuild it with `cargo build -p {package} --all-features{release}`, or run the tests from the workspace root (`cargo test --all-features` builds every member)",
                    newer.display(),
                    package = package_of(name),
                    release = if cfg!(debug_assertions) {
                        ""
                    } else {
                        " --release"
                    },
                );
            }
            path
        }
        None => panic!(
            "the workspace binary `{name}` is not built for this profile: run the tests from the workspace root (`cargo test --all-features` builds every member), or build it with `cargo build -p {package} --all-features{release}` (benchmarks use the release profile)",
            package = package_of(name),
            release = if cfg!(debug_assertions) {
                ""
            } else {
                " --release"
            },
        ),
    }
}

/// The path of the workspace binary `name`, if it has been built.
pub fn find(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    // A test or bench runs from `target/<profile>/deps/`, an example from
    // `target/<profile>/examples/`: the binaries are one level up.
    let profile_dir = exe.parent()?.parent()?;
    let candidate = profile_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    candidate.is_file().then_some(candidate)
}

/// A source file of `name`'s package, or of the library it is built on,
/// changed after the binary was built (`None` when none is, or when times
/// cannot be read).
fn newer_source(binary: &Path, name: &str) -> Option<PathBuf> {
    let built = std::fs::metadata(binary).and_then(|m| m.modified()).ok()?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?.parent()?;
    let package = match name {
        SERVER => "crates/server",
        APPROVALS | JOURNAL => "crates/approvals",
        _ => return None,
    };
    [root.join(package).join("src"), root.join("src")]
        .iter()
        .find_map(|dir| newest_after(dir, built))
}

fn newest_after(dir: &Path, built: std::time::SystemTime) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = newest_after(&path, built) {
                return Some(found);
            }
        } else if path.extension().is_some_and(|e| e == "rs")
            && entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|modified| modified > built)
        {
            return Some(path);
        }
    }
    None
}

fn package_of(name: &str) -> &'static str {
    match name {
        SERVER => "computer-use-server",
        APPROVALS | JOURNAL => "computer-use-approvals",
        _ => "the package that holds it",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The guard against an old binary: a source written after the binary
    /// was built is found, in a nested folder; none is found when the
    /// binary is the newer.
    #[test]
    fn a_source_newer_than_the_binary_is_found_and_an_older_one_is_not() {
        let dir = std::env::temp_dir().join(format!("adk-binary-{}", std::process::id()));
        let nested = dir.join("src").join("deep");
        std::fs::create_dir_all(&nested).unwrap();
        let source = nested.join("lib.rs");
        std::fs::write(&source, "// a source").unwrap();
        let written = std::fs::metadata(&source)
            .and_then(|m| m.modified())
            .unwrap();
        let before = written - std::time::Duration::from_secs(60);
        let after = written + std::time::Duration::from_secs(60);
        assert_eq!(newest_after(&dir.join("src"), before), Some(source.clone()));
        assert_eq!(newest_after(&dir.join("src"), after), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
