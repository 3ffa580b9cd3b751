//! `computer-use-wl-clipboard`: keeps text on a Wayland compositor's
//! clipboard after the server that wrote it has exited, until another
//! program copies something, as `wl-copy` does. The server starts it
//! itself and hands it the text on standard input; see
//! `computer_use_server::desktop::wayland`. Run by hand:
//! `printf 'text' | computer-use-wl-clipboard`.

fn main() -> std::process::ExitCode {
    if std::env::args().skip(1).any(|a| a == "--help" || a == "-h") {
        println!(
            "usage: computer-use-wl-clipboard < TEXT\n\nSets the clipboard of the compositor $WAYLAND_DISPLAY names (through\nwlr-data-control) to the text read from standard input (at most 64 KiB of\nUTF-8), prints `offered`, and offers it until another client copies."
        );
        return std::process::ExitCode::SUCCESS;
    }
    match computer_use_server::desktop::wayland::keep_from_stdin() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("computer-use-wl-clipboard: {why}");
            std::process::ExitCode::FAILURE
        }
    }
}
