//! A GTK form the test changes while the server holds a preview of it
//! (`form_app.py`, a GTK 3 program reached only through the toolkit's own
//! accessibility bridge): renamed, removed, reordered or disabled fields,
//! a form grown past the walk's caps, an application that rewrites a
//! value. Its own printout of its fields is the outside check.

use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::Program;

/// The form program, and the lines it prints.
pub struct Form {
    program: Program,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Form {
    /// Starts a form titled `title` with `fields` (`Label`,
    /// `Label:secret`, `Label:upper`).
    pub fn start(title: &str, fields: &[&str]) -> Self {
        Self::start_in(title, fields, &[])
    }

    /// [`Form::start`], with `env` added to the program's environment (a
    /// Wayland compositor's socket, say).
    pub fn start_in(title: &str, fields: &[&str], env: &[(&str, &str)]) -> Self {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/x11_support/form_app.py");
        // The distribution's Python, which has GTK's bindings
        // (python3-gi, gir1.2-gtk-3.0: `.ci/run` installs them).
        let mut child = Command::new("/usr/bin/python3")
            .arg(script)
            .arg(title)
            .args(fields)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("the GTK form could not be started: {e}"));
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            program: Program(child),
            stdin,
            lines,
        }
    }

    /// The form's process id.
    pub fn pid(&self) -> u32 {
        self.program.0.id()
    }

    /// The next line the form prints starting with `prefix`, waited for
    /// up to 30 s (a GTK program on a busy machine is slow).
    fn line(&self, prefix: &str) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return line,
                Ok(_) => {}
                Err(_) => panic!("the form printed no {prefix:?} line within 30 s"),
            }
        }
    }

    /// Waits (up to 30 s) for the form to print a line starting with
    /// `prefix`; lines before it are passed over.
    pub fn awaited(&self, prefix: &str) -> String {
        self.line(prefix)
    }

    /// Sends `command` and waits until the form has applied it.
    pub fn change(&mut self, command: &str) {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
        self.line(&format!("ack {command}"));
        // The bridge tells the bus in its own time after GTK applied it.
        std::thread::sleep(Duration::from_millis(300));
    }

    /// Whether the form has printed a line starting with `prefix` by now
    /// (lines before it are passed over), without waiting.
    pub fn printed(&self, prefix: &str) -> bool {
        while let Ok(line) = self.lines.try_recv() {
            if line.starts_with(prefix) {
                return true;
            }
        }
        false
    }

    /// The next menu item the form says was chosen (`File>Save`), waited
    /// for up to `wait`; `None` when none was.
    pub fn chosen(&self, wait: Duration) -> Option<String> {
        let deadline = std::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with("menu ") => {
                    return Some(line.trim_start_matches("menu ").to_owned());
                }
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    /// Every field's value in the second window ([`Form::change`]
    /// `twin TITLE`), as the form itself reports them.
    pub fn twin_values(&mut self) -> String {
        writeln!(self.stdin, "twinvalues").unwrap();
        self.stdin.flush().unwrap();
        let line = self.line("twinvalues ");
        line.trim_start_matches("twinvalues ").to_owned()
    }

    /// Every field's value, as the form itself reports them:
    /// `Name=...|Email=...`.
    pub fn values(&mut self) -> String {
        writeln!(self.stdin, "values").unwrap();
        self.stdin.flush().unwrap();
        let line = self.line("values ");
        line.trim_start_matches("values ").to_owned()
    }
}
