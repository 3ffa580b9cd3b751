//! What the real desktops (X11 and Wayland) do the same way, kept once:
//! reading an input tool's arguments, encoding a frame as PNG, checking a
//! declared `window` or `filesystem` postcondition after the effect, and
//! handing the clipboard's text to a keeper process when the server exits.
//! Each desktop keeps only what its platform makes different (how a window
//! is found and judged shown, where pixels come from, which environment a
//! keeper needs and how it says it took the text).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::engine::{EffectCheck, Refusal};
use adk_computer_use::contracts::{ActionPostcondition, PostconditionFields};

fn invalid(message: String) -> Refusal {
    Refusal::new("invalid_arguments", message)
}

/// The text argument `key`.
pub(crate) fn text<'a>(args: &'a Value, key: &str) -> Result<&'a str, Refusal> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("arguments.{key} must be a string")))
}

/// A point from `coordinate: [x, y]` (or `key`), as whole pixels.
pub(crate) fn point(args: &Value, key: &str) -> Result<(i64, i64), Refusal> {
    let pair = args
        .get(key)
        .and_then(Value::as_array)
        .filter(|p| p.len() == 2)
        .ok_or_else(|| invalid(format!("arguments.{key} must be [x, y]")))?;
    let at = |i: usize| {
        pair[i]
            .as_i64()
            .ok_or_else(|| invalid(format!("arguments.{key} must hold whole pixels")))
    };
    Ok((at(0)?, at(1)?))
}

/// `rgb` (8 bits a channel, rows of `width` pixels) as PNG, compressed
/// fast: a frame is encoded on every snapshot.
pub(crate) fn png_of_rgb(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>, Refusal> {
    let mut png_bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut png_bytes, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    let failed = |e: png::EncodingError| Refusal::plain(format!("PNG encoding failed: {e}"));
    let mut writer = encoder.write_header().map_err(failed)?;
    writer.write_image_data(rgb).map_err(failed)?;
    writer.finish().map_err(failed)?;
    Ok(png_bytes)
}

/// The most wheel steps one `scroll` sends.
pub(crate) const MOST_STEPS: u64 = 100;

/// Which way a `scroll` turns the wheel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wheel {
    /// Towards the top.
    Up,
    /// Towards the bottom.
    Down,
    /// Towards the left edge.
    Left,
    /// Towards the right edge.
    Right,
}

/// A `scroll`'s direction and steps (`amount`, 1 when absent, at most
/// [`MOST_STEPS`]).
pub(crate) fn wheel(args: &Value) -> Result<(Wheel, u64), Refusal> {
    let direction = match args.get("direction").and_then(Value::as_str) {
        Some("up") => Wheel::Up,
        Some("down") => Wheel::Down,
        Some("left") => Wheel::Left,
        Some("right") => Wheel::Right,
        _ => {
            return Err(invalid(
                "arguments.direction must be up, down, left or right".to_owned(),
            ));
        }
    };
    let steps = match args.get("amount") {
        None => 1,
        Some(amount) => amount
            .as_u64()
            .filter(|n| (1..=MOST_STEPS).contains(n))
            .ok_or_else(|| invalid(format!("arguments.amount must be 1 to {MOST_STEPS}")))?,
    };
    Ok((direction, steps))
}

/// One window as upstream's record shows it (`list_windows`, and the
/// window of `get_ui_tree`).
pub(crate) struct WindowRecordJson<'a> {
    /// The platform's id of the window.
    pub id: u64,
    /// The application id its client set.
    pub app_id: &'a str,
    /// The name shown for its application.
    pub display_name: &'a str,
    /// Its title, as its client set it.
    pub title: &'a str,
    /// Where it is on the screen: x, y, width, height.
    pub bounds: (i64, i64, u32, u32),
    /// Whether any of it is on the screen.
    pub on_screen: bool,
    /// Whether it holds the focus.
    pub focused: bool,
    /// The process of its client, when the platform names it.
    pub pid: Option<u32>,
}

impl WindowRecordJson<'_> {
    /// Upstream's record (`windowId`, `bundleId`, `title`, `bounds`,
    /// `displayId`, `pid` when known, ...). `bundleId`, `displayName` and
    /// `title` are the client's own words (a window may name itself
    /// "SYSTEM: ..."), so the record is marked
    /// `contentOrigin: "application_untrusted"`.
    pub(crate) fn to_json(&self, display_id: Value) -> Value {
        let (x, y, width, height) = self.bounds;
        let mut record = serde_json::json!({
            "windowId": self.id,
            "contentOrigin": "application_untrusted",
            "bundleId": self.app_id,
            "displayName": self.display_name,
            "title": self.title,
            "bounds": { "x": x, "y": y, "width": width, "height": height },
            "isOnScreen": self.on_screen,
            "isFocused": self.focused,
            "displayId": display_id,
        });
        if let (Some(pid), Value::Object(map)) = (self.pid, &mut record) {
            map.insert("pid".into(), serde_json::json!(pid));
        }
        record
    }
}

/// The window `get_ui_tree` names among `windows` (by its app id, its id,
/// or both; the first listed when neither), or `stale_target` when none.
pub(crate) fn window_named<W>(
    windows: impl IntoIterator<Item = W>,
    app_id: Option<&str>,
    window_id: Option<u64>,
    id_of: impl Fn(&W) -> (&str, u64),
) -> Result<W, Refusal> {
    windows
        .into_iter()
        .find(|w| {
            let (app, id) = id_of(w);
            app_id.is_none_or(|a| a == app) && window_id.is_none_or(|wanted| wanted == id)
        })
        .ok_or_else(|| Refusal::new("stale_target", "no such window"))
}

/// How long a `filesystem` or `window` postcondition is waited for: a
/// window closes, or a file is written, a moment after the input that
/// asked for it.
pub(crate) const EFFECT_WAIT: Duration = Duration::from_millis(1500);

/// How long a window postcondition that held must still hold: a window
/// another client unmapped for a moment (any client may) is back by then.
const STILL_HOLDS: Duration = Duration::from_millis(200);

/// The method names one desktop reports its checks under.
pub(crate) struct CheckNames {
    /// Nothing this desktop can observe was declared.
    pub unobservable: &'static str,
    /// A window's state, as the platform keeps it.
    pub window: &'static str,
    /// A file, read as it is.
    pub filesystem: &'static str,
}

/// Whether `holds` comes true within [`EFFECT_WAIT`], looked at every
/// 25 ms.
fn waited(holds: &dyn Fn() -> bool) -> bool {
    let deadline = Instant::now() + EFFECT_WAIT;
    let mut verified = holds();
    while !verified && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(25));
        verified = holds();
    }
    verified
}

/// A declared `window` or `filesystem` postcondition, checked after the
/// effect: a window by what the platform says of it (`shown`, `None` when
/// it does not know the window), judged twice [`STILL_HOLDS`] apart; a
/// file by reading it. Anything else is not observed here, and not
/// claimed.
pub(crate) fn postcondition_check(
    postcondition: &Value,
    names: &CheckNames,
    shown: &dyn Fn(u64) -> Option<bool>,
) -> EffectCheck {
    let unobservable = EffectCheck {
        verified: false,
        method: names.unobservable,
        checks: 0,
    };
    let Ok(postcondition) = serde_json::from_value::<ActionPostcondition>(postcondition.clone())
    else {
        return unobservable;
    };
    match postcondition.fields() {
        PostconditionFields::Window { window_id, exists } => {
            let holds = || shown(*window_id) == Some(*exists);
            let mut verified = waited(&holds);
            if verified {
                std::thread::sleep(STILL_HOLDS);
                verified = holds();
            }
            EffectCheck {
                verified,
                method: names.window,
                checks: 1,
            }
        }
        PostconditionFields::Filesystem {
            path,
            exists,
            content_digest,
        } => EffectCheck {
            verified: waited(&|| {
                super::files::file_holds(path, *exists, content_digest.as_deref())
            }),
            method: names.filesystem,
            checks: 1,
        },
        _ => unobservable,
    }
}

/// How long a clipboard write is read back for: the text is offered on
/// another connection (or by the keeper's thread), which the platform may
/// not have seen when the first read is made.
pub(crate) const CLIPBOARD_WAIT: Duration = Duration::from_millis(1000);

/// A clipboard write judged on the clipboard itself: `read` (every `poll`,
/// for at most [`CLIPBOARD_WAIT`]) until it serves the text asked for, the
/// text's digest the one declared, and the offer still this process's own
/// (`ours`): a read-back proves what every client gets only then, since
/// another owner may answer each reader differently.
pub(crate) fn clipboard_readback(
    args: &Value,
    postcondition: Option<&Value>,
    poll: Duration,
    read: &dyn Fn() -> Option<String>,
    ours: &dyn Fn() -> bool,
    method: &'static str,
) -> EffectCheck {
    let wanted = args.get("text").and_then(Value::as_str);
    let deadline = Instant::now() + CLIPBOARD_WAIT;
    let mut got = read();
    while got.as_deref() != wanted && Instant::now() < deadline {
        std::thread::sleep(poll);
        got = read();
    }
    let digest_holds = match postcondition {
        None => true,
        Some(p) => match serde_json::from_value::<ActionPostcondition>(p.clone()) {
            Ok(p) => p.expected_digest().is_none_or(|d| {
                got.as_deref()
                    .map(adk_computer_use::digest::sha256_prefixed)
                    .as_deref()
                    == Some(d)
            }),
            Err(_) => false,
        },
    };
    EffectCheck {
        verified: ours() && wanted.is_some() && got.as_deref() == wanted && digest_holds,
        method,
        checks: 2,
    }
}

/// The most text the clipboard tools and the keeper take, in bytes.
pub(crate) const MOST_CLIPBOARD_BYTES: usize = 64 * 1024;

/// The text a keeper is handed: standard input to its end, at most
/// [`MOST_CLIPBOARD_BYTES`] of UTF-8.
pub(crate) fn keeper_text_from_stdin() -> Result<String, String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MOST_CLIPBOARD_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("reading standard input failed: {e}"))?;
    if bytes.len() > MOST_CLIPBOARD_BYTES {
        return Err(format!(
            "the text is longer than {MOST_CLIPBOARD_BYTES} bytes"
        ));
    }
    String::from_utf8(bytes).map_err(|_| "the text is not UTF-8".to_owned())
}

/// Names the keeper program, an absolute path (`off` keeps nothing).
pub(crate) const KEEPER_ENV: &str = "COMPUTER_USE_CLIPBOARD_KEEPER";

/// The keeper `binary`'s path: [`KEEPER_ENV`] (an absolute path), else
/// beside this executable or one directory up (an example or a test binary
/// sits one below the binaries cargo builds). `PATH` is not searched: the
/// program that gets the text is one this build placed. `Err` when turned
/// off or found nowhere; `feature` names the server feature that builds it.
pub(crate) fn keeper_path(binary: &str, feature: &str) -> Result<PathBuf, String> {
    if let Some(named) = std::env::var_os(KEEPER_ENV) {
        if named == "off" {
            return Err(format!("{KEEPER_ENV}=off"));
        }
        let named = PathBuf::from(named);
        if !named.is_absolute() {
            return Err(format!(
                "{KEEPER_ENV} names {}, not an absolute path",
                named.display()
            ));
        }
        return Ok(named);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            let dir = exe.parent()?.to_path_buf();
            [dir.clone(), dir.parent()?.to_path_buf()]
                .into_iter()
                .map(|d| d.join(binary))
                .find(|p| p.is_file())
        })
        .ok_or_else(|| {
            format!("{binary} was not found beside this program (build it: cargo build -p computer-use-server --features {feature} --bins, or name it in {KEEPER_ENV})")
        })
}

/// Starts the keeper at `path` in a process group of its own, with only
/// the environment variables `kept` of this process's (which may hold an
/// embedding program's keys), and writes `text` to its standard input; its
/// standard output is piped when `reports` (it says when it took the
/// text). A keeper that could not be given the text is ended.
pub(crate) fn start_keeper(
    path: &std::path::Path,
    kept: &[&str],
    text: &str,
    reports: bool,
) -> Result<Child, String> {
    use std::os::unix::process::CommandExt as _;
    let mut command = Command::new(path);
    command.env_clear();
    for name in kept {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(if reports {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("starting {} failed: {e}", path.display()))?;
    let handed = child
        .stdin
        .take()
        .ok_or_else(|| "the keeper has no standard input".to_owned())
        .and_then(|mut input| {
            input
                .write_all(text.as_bytes())
                .map_err(|e| format!("handing the text to the keeper failed: {e}"))
        });
    if let Err(err) = handed {
        let _ = child.kill();
        let _ = child.wait();
        return Err(err);
    }
    Ok(child)
}

/// The checks a real desktop makes after an effect, for [`verify`].
pub(crate) trait Checks: crate::desktop::atspi::actions::ElementHost {
    /// The method named when input was sent and nothing was declared (so
    /// nothing is claimed).
    const INPUT_SENT: &'static str;

    /// A clipboard write, judged on the clipboard itself.
    fn clipboard_check(&self, args: &Value, postcondition: Option<&Value>) -> EffectCheck;

    /// A declared postcondition other than the clipboard's or an element's.
    fn postcondition_check(&self, postcondition: &Value) -> EffectCheck;
}

/// After the effect of `tool`: the announced clipboard check is judged on
/// the clipboard itself, as the simulated desktop judges it; an element
/// action by reading the elements back, unless it declared a check of
/// something else (a file the press saved, a window it closed), which is
/// checked as any action's postcondition is; input with nothing declared
/// claims nothing. A postcondition is never counted as holding because
/// another check does.
pub(crate) fn verify<D: Checks>(
    desktop: &D,
    tool: &str,
    args: &Value,
    postcondition: Option<&Value>,
    target: Option<&adk_computer_use::contracts::TargetEvidence>,
) -> EffectCheck {
    use adk_computer_use::contracts::catalogue::tool;
    let clipboard_form = |p: &Value| {
        serde_json::from_value::<ActionPostcondition>(p.clone())
            .is_ok_and(|p| crate::desktop::simulated::is_clipboard_check(&p))
    };
    if tool == tool::WRITE_CLIPBOARD && postcondition.is_none_or(clipboard_form) {
        return desktop.clipboard_check(args, postcondition);
    }
    if crate::desktop::atspi::actions::ELEMENT_TOOLS.contains(&tool) {
        if let Some(postcondition) = postcondition
            && postcondition.get("kind").and_then(Value::as_str) != Some("ui_element")
        {
            return desktop.postcondition_check(postcondition);
        }
        return desktop.verify_elements(tool, args, postcondition, target);
    }
    match postcondition {
        None => EffectCheck {
            verified: true,
            method: D::INPUT_SENT,
            checks: 0,
        },
        Some(postcondition) => desktop.postcondition_check(postcondition),
    }
}

/// What `get_ui_tree` answers for a window of a real desktop: the window
/// (`record`, as `list_windows` shows it; its app id and title are its
/// client's own words), the revision that binds an action to it, the
/// platform's own nodes (`tree_kind`), and its element tree, shown to
/// `max_depth`, or why there is none.
#[allow(clippy::too_many_arguments)] // one answer's parts, each named at the call
pub(crate) fn ui_tree_answer(
    app_id: &str,
    window_id: u64,
    record: Value,
    revision: &str,
    tree_kind: &str,
    nodes: Value,
    elements: Result<&crate::desktop::atspi::Tree, Refusal>,
    max_depth: Option<usize>,
) -> Value {
    let mut answer = serde_json::json!({
        "contentOrigin": "application_untrusted",
        "appId": app_id,
        "windowId": window_id,
        "window": record,
        "uiTreeRevision": revision,
        "treeKind": tree_kind,
        "accessibility": "unavailable",
        "elements": [],
        "nodes": nodes,
    });
    match elements {
        Ok(tree) => {
            answer["elementTreeRevision"] = serde_json::json!(tree.revision.clone());
            crate::desktop::atspi::actions::show_tree(&mut answer, tree, max_depth);
        }
        Err(refusal) => answer["accessibilityNote"] = serde_json::json!(refusal.message),
    }
    answer
}
