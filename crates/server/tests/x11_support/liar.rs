//! The lying application (`lying_app.py`), started for a test and killed
//! when dropped: it joins the accessibility bus's registry itself and
//! answers as it likes (see its own doc for its modes).

use std::io::Write as _;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use computer_use_server::desktop::atspi::Bounds;

/// Where the lying application's frame says it is.
pub const BOUNDS: Bounds = (100, 100, 400, 300);

/// The lying application, running until dropped, the file it logs its
/// calls to and the file it takes commands from.
pub struct Liar {
    child: Child,
    log: std::path::PathBuf,
    ctl: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Liar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Liar {
    /// Starts it with a frame titled `title`, calling its toolkit
    /// `toolkit`, in `mode` (`hang`, `twofocus`, `cache`, or none); waits
    /// until it has joined the registry.
    pub fn start(title: &str, toolkit: &str, mode: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("calls.log");
        let ctl = dir.path().join("ctl");
        std::fs::write(&ctl, "").unwrap();
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/x11_support/lying_app.py"
        );
        let child = Command::new("/usr/bin/python3")
            .arg(script)
            .args([title, toolkit])
            .arg(&log)
            .env("MODE", mode)
            .env("CTL", &ctl)
            .spawn()
            .unwrap();
        let liar = Self {
            child,
            log,
            ctl,
            _dir: dir,
        };
        let started = Instant::now();
        while !liar.calls().contains("embedded") {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the lying application did not join the registry"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        liar
    }

    /// Its process.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Every call it logged so far.
    pub fn calls(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// How many logged calls start with `call`.
    pub fn count(&self, call: &str) -> usize {
        self.calls().lines().filter(|l| l.starts_with(call)).count()
    }

    /// Sends `command` (MODE=cache) and waits until the application has
    /// sent its events.
    pub fn command(&self, command: &str) {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.ctl)
            .unwrap();
        writeln!(f, "{command}").unwrap();
        let started = Instant::now();
        let want = format!("done {command}");
        while self.calls().lines().filter(|l| *l == want).count() < self.sent_of(command) {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{command} not done"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn sent_of(&self, command: &str) -> usize {
        std::fs::read_to_string(&self.ctl)
            .unwrap()
            .lines()
            .filter(|l| *l == command)
            .count()
    }
}
