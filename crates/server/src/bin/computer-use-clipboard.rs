//! `computer-use-clipboard`: keeps text on the X11 CLIPBOARD selection
//! after the server that wrote it has exited, until another program copies
//! something. The server starts it itself, hands it the text on standard
//! input and waits until it owns the selection; see
//! `computer_use_server::desktop::x11::keeper`. Run by hand:
//! `printf 'text' | computer-use-clipboard`.

fn main() -> std::process::ExitCode {
    if std::env::args().skip(1).any(|a| a == "--help" || a == "-h") {
        println!(
            "usage: computer-use-clipboard < TEXT\n\nTakes the X11 CLIPBOARD selection of $DISPLAY with the text read from\nstandard input (at most 64 KiB of UTF-8) and serves it until another\nclient takes the selection or the display goes away."
        );
        return std::process::ExitCode::SUCCESS;
    }
    match computer_use_server::desktop::x11::keeper::keep_from_stdin() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("computer-use-clipboard: {why}");
            std::process::ExitCode::FAILURE
        }
    }
}
