//! A tree read fast is the tree read node by node.
//!
//! The server reads the toolkits bridged by at-spi2-atk (GTK 3, Chromium,
//! Firefox) with `Properties.GetAll`, which says a node's name,
//! description and child count in one answer, and does not ask a node
//! that says it has no children for them. These tests read the same
//! window both ways and compare every node (role, name, label,
//! description, value, bounds, actions, states, children), on gedit and
//! on a Chromium page. A field mixed up between the two reads (a name
//! taken for a description, children skipped for a count misread) fails
//! them.
//!
//! They need an X server, the session's accessibility bus, gedit and
//! Chromium (`.ci/run` installs them); built without a display or bus they
//! are reported ignored, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::Duration;

use adk_computer_use_testkit::needs;
use computer_use_server::DesktopBackend;
use computer_use_server::desktop::atspi::Accessibility;
use computer_use_server::desktop::x11::X11Desktop;

mod x11_support;

use x11_support::Program;

/// `program` with settings of its own in `home` (nothing an earlier run
/// left is shown).
fn start(program: &str, args: &[&str], home: &std::path::Path) -> Program {
    Program(
        Command::new(program)
            .args(args)
            .env("GSETTINGS_BACKEND", "memory")
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_CACHE_HOME", home.join("cache"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{program} could not be started: {e}")),
    )
}

/// The window titled `title`, once its tree has stopped growing: its
/// process, title and bounds.
fn settled(desktop: &X11Desktop, title: &str) -> (u32, String, (i64, i64, u32, u32)) {
    let mut last = 0;
    for _ in 0..150 {
        std::thread::sleep(Duration::from_millis(200));
        let Ok(windows) = desktop.list_windows() else {
            continue;
        };
        let Some(w) = windows["windows"]
            .as_array()
            .and_then(|ws| ws.iter().find(|w| w["title"] == title))
            .cloned()
        else {
            continue;
        };
        let nodes = desktop
            .ui_tree(w["bundleId"].as_str(), w["windowId"].as_u64(), None)
            .ok()
            .and_then(|t| t["elementTreeNodes"].as_u64())
            .unwrap_or(0);
        if nodes > 0 && nodes == last {
            let b = &w["bounds"];
            let bounds = (
                b["x"].as_i64().unwrap(),
                b["y"].as_i64().unwrap(),
                u32::try_from(b["width"].as_u64().unwrap()).unwrap(),
                u32::try_from(b["height"].as_u64().unwrap()).unwrap(),
            );
            let pid = u32::try_from(w["pid"].as_u64().unwrap()).unwrap();
            return (pid, title.to_owned(), bounds);
        }
        last = nodes;
    }
    panic!("the window {title:?} did not settle in 30 s");
}

/// Reads the window both ways and compares them node by node; the node
/// count read.
fn both_reads_agree(title: &str) -> usize {
    let desktop = X11Desktop::connect_unwatched().unwrap();
    let (pid, title, bounds) = settled(&desktop, title);
    let bus = Accessibility::connect().unwrap();
    // Twice each way: a toolkit that builds objects on demand (gedit's
    // popover rows) has built them all by the second read.
    let mut fast = bus.tree(pid, &title, bounds).unwrap();
    let mut slow = bus.tree_node_by_node(pid, &title, bounds).unwrap();
    for _ in 0..2 {
        if fast.nodes == slow.nodes {
            break;
        }
        fast = bus.tree(pid, &title, bounds).unwrap();
        slow = bus.tree_node_by_node(pid, &title, bounds).unwrap();
    }
    assert_eq!(fast.nodes.len(), slow.nodes.len(), "node counts differ");
    for (f, s) in fast.nodes.iter().zip(&slow.nodes) {
        assert_eq!(f, s, "a node reads differently asked with GetAll");
    }
    assert_eq!(fast.revision, slow.revision);
    assert_eq!(fast.values, slow.values);
    fast.nodes.len()
}

#[test]
#[needs(display, accessibility)]
fn gedit_reads_the_same_asked_in_one_call_as_node_by_node() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("note.txt");
    std::fs::write(&file, "A line of text.\n").unwrap();
    let _gedit = start(
        "gedit",
        &["--standalone", file.to_str().unwrap()],
        home.path(),
    );
    let title = format!("note.txt ({}) - gedit", home.path().display());
    let nodes = both_reads_agree(&title);
    // gedit's window is some 530 nodes, 16 levels deep.
    assert!(nodes > 400, "gedit's tree read only {nodes} nodes");
}

#[test]
#[needs(display, accessibility)]
fn a_chromium_page_reads_the_same_asked_in_one_call_as_node_by_node() {
    let home = tempfile::tempdir().unwrap();
    let page = home.path().join("page.html");
    let mut html = String::from("<!doctype html><title>Rows</title><table>");
    for row in 0..60 {
        html.push_str(&format!(
            "<tr><td>Item {row}</td><td><button>Buy {row}</button></td></tr>"
        ));
    }
    html.push_str("</table><form><label>Note <input name=note value=kept></label>");
    html.push_str("<label><input type=checkbox checked> Gift</label></form>");
    std::fs::write(&page, html).unwrap();
    let profile = home.path().join("chromium");
    let _chromium = Program(
        Command::new("chromium")
            .args([
                "--no-sandbox",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-gpu",
                "--password-store=basic",
                "--force-renderer-accessibility",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(format!("file://{}", page.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromium could not be started"),
    );
    let nodes = both_reads_agree("Rows - Chromium");
    assert!(nodes > 200, "the page's tree read only {nodes} nodes");
}
