//! How fast the server reads a real application's whole accessible tree,
//! beside pyatspi reading the same window in the same run (the Python
//! client Orca and Accerciser use): figures and ratios printed, never
//! asserted.
//!
//! `cargo bench -p computer-use-server --features x11 --bench trees`
//!
//! Needs an X server (`$DISPLAY`), a D-Bus session with the accessibility
//! bus, the applications (gedit, gtk3-widget-factory from gtk-3-examples,
//! gnome-calculator, Chromium on a page of about 2,000 nodes: a table of
//! 280 rows and a form) and python3-pyatspi. For each application found on
//! the machine it prints the tree's nodes, the server's cold read (a
//! server just connected, nothing of the window in memory: a whole walk),
//! its warm reads (a server that has read the window before and kept it
//! true by the bus's events),
//! pyatspi's walk of the same window (a fresh process each time, as a
//! client starting cold; `benches/pyatspi_walk.py` reads per node what the
//! server reads), in nodes per second, and the ratios.
//!
//! The server's read is `get_ui_tree` through the desktop backend, in
//! process: the X window's geometry and its whole element tree, as an
//! action's revision takes it. Knobs: `TREES_ROUNDS` (default 3),
//! `TREES_ONLY` (only the windows whose title contains it).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use computer_use_server::DesktopBackend;
use computer_use_server::desktop::x11::X11Desktop;
use serde_json::Value;

mod support;
use support::{Reaped, knob};

/// Starts `program`; `feed`, when given, is written to its standard input
/// (the form's command for its rows), which stays open while it runs.
fn start(
    program: &str,
    args: &[&str],
    feed: Option<&str>,
    home: &std::path::Path,
) -> Option<Reaped> {
    use std::io::Write as _;
    let mut child = Command::new(program)
        .args(args)
        .env("GSETTINGS_BACKEND", "memory")
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    if let (Some(feed), Some(stdin)) = (feed, child.stdin.as_mut()) {
        stdin.write_all(feed.as_bytes()).ok()?;
        stdin.flush().ok()?;
    }
    Some(Reaped(child))
}

/// The window titled `title` and its tree's node count, once the tree's
/// size has stopped changing (the application settled).
fn settled(desktop: &X11Desktop, title: &str) -> Option<(u64, String, u32, u64)> {
    let mut last = 0;
    for _ in 0..150 {
        std::thread::sleep(Duration::from_millis(200));
        let Ok(windows) = desktop.list_windows() else {
            continue;
        };
        let Some(window) = windows["windows"]
            .as_array()
            .and_then(|ws| ws.iter().find(|w| w["title"] == title))
            .cloned()
        else {
            continue;
        };
        let id = window["windowId"].as_u64()?;
        let app = window["bundleId"].as_str()?.to_owned();
        let pid = u32::try_from(window["pid"].as_u64()?).ok()?;
        let nodes = desktop
            .ui_tree(Some(&app), Some(id), None)
            .ok()
            .and_then(|t| t["elementTreeNodes"].as_u64())
            .unwrap_or(0);
        if nodes > 0 && nodes == last {
            return Some((id, app, pid, nodes));
        }
        last = nodes;
    }
    None
}

fn pyatspi(pid: u32, title: &str) -> Option<(u64, f64)> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/pyatspi_walk.py");
    let out = Command::new("/usr/bin/python3")
        .arg(script)
        .arg(pid.to_string())
        .arg(title)
        .output()
        .ok()?;
    let answer: Value = serde_json::from_slice(&out.stdout).ok()?;
    Some((answer["nodes"].as_u64()?, answer["ms"].as_f64()?))
}

fn range(samples: &[f64]) -> String {
    let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
    let max = samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{min:.0}–{max:.0}")
}

/// A page of `rows` table rows (three cells each) and a small form.
fn catalogue(rows: usize) -> String {
    let mut page = String::from(
        "<!doctype html><title>Catalogue</title><h1>Catalogue</h1><table><tr><th>Item</th><th>Colour</th><th>Price</th></tr>",
    );
    for row in 0..rows {
        page.push_str(&format!(
            "<tr><td>Item {row}</td><td>Blue</td><td>{}.00</td></tr>",
            row % 97
        ));
    }
    page.push_str(
        "</table><form><label>Note <input name=note></label><button>Order</button></form>",
    );
    page
}

fn main() {
    let rounds = knob("TREES_ROUNDS", 3);
    let desktop = X11Desktop::connect_unwatched().expect("an X server and the accessibility bus");
    let home = tempfile::tempdir().unwrap();
    let note = home.path().join("note.txt");
    std::fs::write(&note, "").unwrap();
    let note_title = format!("note.txt ({}) - gedit", home.path().display());
    let note_path = note.to_str().unwrap().to_owned();
    let page = home.path().join("catalogue.html");
    std::fs::write(&page, catalogue(280)).unwrap();
    let page_url = format!("file://{}", page.display());
    let profile = format!("--user-data-dir={}", home.path().join("chromium").display());
    let form = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/x11_support/form_app.py");
    let apps: [(&str, Vec<&str>, String, Option<&str>); 5] = [
        ("gedit", vec!["--standalone", &note_path], note_title, None),
        (
            "gtk3-widget-factory",
            vec![],
            "gtk3-widget-factory".into(),
            None,
        ),
        ("gnome-calculator", vec![], "Calculator".into(), None),
        // A GTK 3 window of 10,008 nodes: 5,000 rows of a label and an
        // entry in one grid.
        (
            "/usr/bin/python3",
            vec![form, "Rows of 5000", "Name"],
            "Rows of 5000".into(),
            Some("rows 5000\n"),
        ),
        (
            "chromium",
            vec![
                "--no-sandbox",
                "--no-first-run",
                "--disable-gpu",
                "--force-renderer-accessibility",
                &profile,
                &page_url,
            ],
            "Catalogue - Chromium".into(),
            None,
        ),
    ];
    println!(
        "| application | nodes | server cold ms | server warm ms | pyatspi ms | server cold nodes/s | server warm nodes/s | pyatspi nodes/s | cold ratio | warm ratio |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let only = std::env::var("TREES_ONLY").unwrap_or_default();
    for (program, args, title, feed) in apps {
        if !title.contains(only.as_str()) {
            continue;
        }
        let name = if feed.is_some() {
            "form_app.py (GTK 3 grid)"
        } else {
            program
        };
        let Some(_app) = start(program, &args, feed, home.path()) else {
            println!("| {name} | not installed | | | | | | | | |");
            continue;
        };
        let Some((id, app, pid, nodes)) = settled(&desktop, &title) else {
            println!("| {name} | its window did not settle | | | | | | | | |");
            continue;
        };
        let (mut cold, mut warm, mut baseline) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            let read = |desktop: &X11Desktop| {
                let started = Instant::now();
                let tree = desktop.ui_tree(Some(&app), Some(id), None).unwrap();
                assert_eq!(tree["accessibility"], "atspi");
                started.elapsed().as_secs_f64() * 1000.0
            };
            // Cold: a server just started, nothing of the window in
            // memory (its connection made before the clock starts).
            let fresh = X11Desktop::connect_unwatched().expect("a second connection");
            cold.push(read(&fresh));
            warm.push(read(&desktop));
            warm.push(read(&desktop));
            if let Some((walked, ms)) = pyatspi(pid, &title) {
                if walked.abs_diff(nodes) > nodes / 10 {
                    println!("  (pyatspi walked {walked} nodes, the server {nodes})");
                }
                baseline.push(ms);
            }
        }
        let per_s = |ms: &[f64]| {
            let mean = ms.iter().sum::<f64>() / ms.len().max(1) as f64;
            nodes as f64 / (mean / 1000.0)
        };
        let (c, w, b) = (per_s(&cold), per_s(&warm), per_s(&baseline));
        println!(
            "| {name} | {nodes} | {} | {} | {} | {c:.0} | {w:.0} | {b:.0} | {:.1}× | {:.1}× |",
            range(&cold),
            range(&warm),
            range(&baseline),
            c / b,
            w / b
        );
    }
}
