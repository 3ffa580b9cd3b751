//! The clipboard over wlr-data-control (through `wl-clipboard-rs`): the
//! text is offered from a thread of this process while it lives, read
//! back through a connection of its own as any client would, and at the
//! server's end handed to the keeper `computer-use-wl-clipboard`, which
//! offers it until another program copies, as `wl-copy` does.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use wl_clipboard_rs::copy::{self, MimeType, Options, ServeRequests, Source};
use wl_clipboard_rs::paste::{self, ClipboardType, Seat};

use crate::engine::Refusal;

/// Longest text written at once.
pub const MOST_BYTES: usize = crate::desktop::real::MOST_CLIPBOARD_BYTES;
/// The keeper's binary name.
pub const KEEPER_BINARY: &str = "computer-use-wl-clipboard";
/// How long the exiting server waits for the keeper to offer the text.
const TAKE_WAIT: Duration = Duration::from_secs(3);

/// The text this process offers now, and whether its offer still stands
/// (no other client has taken the clipboard since).
#[derive(Default)]
pub(super) struct Offer {
    standing: Option<Arc<AtomicBool>>,
}

impl Offer {
    /// Offers `text` on the clipboard from a thread of this process, once
    /// the compositor has set it as the selection.
    pub(super) fn write(&mut self, text: &str, secret: bool) -> Result<(), Refusal> {
        let mut options = Options::new();
        options
            .foreground(true)
            .serve_requests(ServeRequests::Unlimited)
            .sensitive(secret);
        let prepared = options
            .prepare_copy(Source::Bytes(text.as_bytes().into()), MimeType::Text)
            .map_err(|e| Refusal::plain(format!("the clipboard could not be set: {e}")))?;
        if let Some(old) = self.standing.take() {
            old.store(false, Ordering::SeqCst);
        }
        let standing = Arc::new(AtomicBool::new(true));
        let flag = Arc::clone(&standing);
        std::thread::Builder::new()
            .name("wayland-clipboard".into())
            .spawn(move || {
                // Serves until another client's selection replaces this one.
                let _ = prepared.serve();
                flag.store(false, Ordering::SeqCst);
            })
            .map_err(|e| Refusal::plain(format!("the clipboard's thread: {e}")))?;
        self.standing = Some(standing);
        Ok(())
    }

    /// Whether this process's offer is still the clipboard's.
    pub(super) fn stands(&self) -> bool {
        self.standing
            .as_ref()
            .is_some_and(|s| s.load(Ordering::SeqCst))
    }
}

/// How long a read of the clipboard is waited for: the clipboard's owner
/// writes the text into a pipe, and an owner that never closes it would
/// otherwise hold the server.
const READ_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// The clipboard's text now, as any client reads it (at most
/// [`MOST_BYTES`]); empty when the clipboard holds nothing. Read on a
/// thread of its own and waited for [`READ_WAIT`] at most (a thread an
/// owner holds ends when that owner lets go of the pipe).
pub(super) fn read() -> Result<String, Refusal> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("wayland-clipboard-read".into())
        .spawn(move || {
            let _ = tx.send(read_blocking());
        })
        .map_err(|e| Refusal::plain(format!("the clipboard's reading thread: {e}")))?;
    rx.recv_timeout(READ_WAIT).unwrap_or_else(|_| {
        Err(Refusal::plain(format!(
            "the clipboard's owner did not hand its text over within {} ms",
            READ_WAIT.as_millis()
        )))
    })
}

fn read_blocking() -> Result<String, Refusal> {
    match paste::get_contents(
        ClipboardType::Regular,
        Seat::Unspecified,
        paste::MimeType::Text,
    ) {
        Ok((pipe, _mime)) => {
            let mut bytes = Vec::new();
            pipe.take(MOST_BYTES as u64 + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| Refusal::plain(format!("reading the clipboard failed: {e}")))?;
            if bytes.len() > MOST_BYTES {
                return Err(Refusal::plain(format!(
                    "the clipboard holds more than {MOST_BYTES} bytes"
                )));
            }
            String::from_utf8(bytes)
                .map_err(|_| Refusal::plain("the clipboard's text is not UTF-8"))
        }
        Err(paste::Error::NoSeats | paste::Error::ClipboardEmpty | paste::Error::NoMimeType) => {
            Ok(String::new())
        }
        Err(e) => Err(Refusal::plain(format!("reading the clipboard failed: {e}"))),
    }
}

/// Hands `text` to a keeper started here, and waits until it says it
/// offers it; returns its process id.
pub(super) fn hand_off(text: &str) -> Result<u32, String> {
    let path = crate::desktop::real::keeper_path(KEEPER_BINARY, "wayland")?;
    // The keeper gets the compositor's socket and nothing else.
    let mut child = crate::desktop::real::start_keeper(
        &path,
        &["WAYLAND_DISPLAY", "XDG_RUNTIME_DIR"],
        text,
        true,
    )?;
    let pid = child.id();
    let said = match child.stdout.take() {
        None => Err("the keeper has no standard output".to_owned()),
        Some(stdout) => {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let mut line = String::new();
                let _ = BufReader::new(stdout).read_line(&mut line);
                let _ = tx.send(line);
            });
            let started = Instant::now();
            match rx.recv_timeout(TAKE_WAIT) {
                Ok(line) if line.trim() == "offered" => Ok(()),
                Ok(line) => Err(format!(
                    "the keeper did not offer the text: {:?}",
                    line.trim()
                )),
                Err(_) => Err(format!(
                    "the keeper did not offer the text within {} ms",
                    started.elapsed().as_millis()
                )),
            }
        }
    };
    if let Err(err) = said {
        let _ = child.kill();
        let _ = child.wait();
        return Err(err);
    }
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(pid)
}

/// The keeper itself: reads the text from standard input (to its end, at
/// most 64 KiB of UTF-8), sets it as the clipboard, says `offered` on
/// standard output, and offers it until another client copies.
pub fn keep_from_stdin() -> Result<(), String> {
    let text = crate::desktop::real::keeper_text_from_stdin()?;
    let mut options = Options::new();
    options
        .foreground(true)
        .serve_requests(ServeRequests::Unlimited);
    let prepared = options
        .prepare_copy(Source::Bytes(text.into_bytes().into()), MimeType::Text)
        .map_err(|e| format!("the clipboard could not be set: {e}"))?;
    println!("offered");
    let _ = std::io::stdout().flush();
    prepared
        .serve()
        .map_err(|e: copy::Error| format!("serving the clipboard failed: {e}"))
}
