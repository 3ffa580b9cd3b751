//! Keys on Wayland: a virtual keyboard brings its own keymap. Printable
//! ASCII and the named keys sit where a US keyboard has them (a capital
//! or a symbol is its key with Shift), so the code a client reads says
//! which key it is as well as the keysym does: Chromium takes a key's
//! meaning partly from its code, and dropped a space sent on the code of
//! Escape (measured, when every keysym had a key of its own in order).
//! Any other character gets a key of its own past the US ones, at the
//! first level; no layout of the seat's can alter what arrives.
//!
//! A client takes a new keymap in its own time, and a key that reaches it
//! first is dropped (seen here with GTK on sway: the Tab after a change of
//! keymap went nowhere). So the keymap is the same for every action whose
//! keys are printable ASCII or named keys, and changes only for text that
//! needs more (the compositor connection waits for a changed keymap to
//! settle before it sends a key of it).

use crate::desktop::keys::{Keysym, SHIFT_L, char_keysym, is_modifier, named_keysym};
use crate::engine::Refusal;

/// Longest text `type` takes at once.
pub(super) const MOST_TYPED: usize = 4096;

/// The evdev code of the first key past the US ones (F13), and how many
/// such keys one action's keymap holds (XKB keycodes run to 255, evdev
/// codes to 247).
const EXTRA_FIRST: u32 = 183;
const MOST_EXTRA: usize = 65;

/// The evdev code of Left Shift, held for a key's second level.
const SHIFT_CODE: u32 = 42;

/// The printable keys of a US keyboard: evdev code, the character at the
/// first level and at the second (with Shift).
const US: [(u32, char, char); 48] = [
    (41, '`', '~'),
    (2, '1', '!'),
    (3, '2', '@'),
    (4, '3', '#'),
    (5, '4', '$'),
    (6, '5', '%'),
    (7, '6', '^'),
    (8, '7', '&'),
    (9, '8', '*'),
    (10, '9', '('),
    (11, '0', ')'),
    (12, '-', '_'),
    (13, '=', '+'),
    (16, 'q', 'Q'),
    (17, 'w', 'W'),
    (18, 'e', 'E'),
    (19, 'r', 'R'),
    (20, 't', 'T'),
    (21, 'y', 'Y'),
    (22, 'u', 'U'),
    (23, 'i', 'I'),
    (24, 'o', 'O'),
    (25, 'p', 'P'),
    (26, '[', '{'),
    (27, ']', '}'),
    (43, '\\', '|'),
    (30, 'a', 'A'),
    (31, 's', 'S'),
    (32, 'd', 'D'),
    (33, 'f', 'F'),
    (34, 'g', 'G'),
    (35, 'h', 'H'),
    (36, 'j', 'J'),
    (37, 'k', 'K'),
    (38, 'l', 'L'),
    (39, ';', ':'),
    (40, '\'', '"'),
    (44, 'z', 'Z'),
    (45, 'x', 'X'),
    (46, 'c', 'C'),
    (47, 'v', 'V'),
    (48, 'b', 'B'),
    (49, 'n', 'N'),
    (50, 'm', 'M'),
    (51, ',', '<'),
    (52, '.', '>'),
    (53, '/', '?'),
    (57, ' ', ' '),
];

/// The named keys (see [`named_keysym`]) where a US keyboard has them:
/// evdev code and keysym.
const NAMED: [(u32, Keysym); 30] = [
    (29, 0xffe3),
    (42, 0xffe1),
    (56, 0xffe9),
    (125, 0xffeb),
    (28, 0xff0d),
    (15, 0xff09),
    (1, 0xff1b),
    (14, 0xff08),
    (111, 0xffff),
    (102, 0xff50),
    (107, 0xff57),
    (104, 0xff55),
    (109, 0xff56),
    (105, 0xff51),
    (103, 0xff52),
    (106, 0xff53),
    (108, 0xff54),
    (110, 0xff63),
    (59, 0xffbe),
    (60, 0xffbf),
    (61, 0xffc0),
    (62, 0xffc1),
    (63, 0xffc2),
    (64, 0xffc3),
    (65, 0xffc4),
    (66, 0xffc5),
    (67, 0xffc6),
    (68, 0xffc7),
    (87, 0xffc8),
    (88, 0xffc9),
];

fn invalid(message: impl Into<String>) -> Refusal {
    Refusal::new("invalid_arguments", message)
}

/// An action's keys: the keymap and, in order, `(evdev code, pressed,
/// modifier mask held after it)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Keys {
    pub keymap: String,
    pub events: Vec<(u32, bool, u32)>,
}

/// The modifier bit XKB's `complete` types give a modifier keysym.
fn modifier_bit(sym: Keysym) -> Option<(u32, &'static str)> {
    match sym {
        0xffe1 | 0xffe2 => Some((1, "Shift")),
        0xffe3 | 0xffe4 => Some((4, "Control")),
        0xffe9 | 0xffea => Some((8, "Mod1")),
        0xffeb | 0xffec => Some((64, "Mod4")),
        _ => None,
    }
}

/// The key of `sym` on the US keys: its evdev code, and whether it is
/// the key's second level (Shift held).
fn us_key(sym: Keysym) -> Option<(u32, bool)> {
    if let Some((code, _)) = NAMED.iter().find(|(_, named)| *named == sym) {
        return Some((*code, false));
    }
    US.iter().find_map(|(code, first, second)| {
        if char_keysym(*first) == sym {
            Some((*code, false))
        } else if char_keysym(*second) == sym {
            Some((*code, true))
        } else {
            None
        }
    })
}

/// The keymap of one action: the US keys and the named keys, then the
/// keys its other characters need, in the order they were first asked
/// for.
struct Builder {
    extra: Vec<Keysym>,
}

impl Builder {
    fn new() -> Self {
        Self { extra: Vec::new() }
    }

    /// The evdev code of `sym`'s key, and whether Shift is held for it.
    fn key(&mut self, sym: Keysym) -> Result<(u32, bool), Refusal> {
        if let Some(key) = us_key(sym) {
            return Ok(key);
        }
        let index = match self.extra.iter().position(|s| *s == sym) {
            Some(index) => index,
            None => {
                if self.extra.len() >= MOST_EXTRA {
                    return Err(invalid(format!(
                        "the text needs more than {MOST_EXTRA} distinct characters beyond US ASCII"
                    )));
                }
                self.extra.push(sym);
                self.extra.len() - 1
            }
        };
        Ok((EXTRA_FIRST + u32::try_from(index).unwrap_or(0), false))
    }

    fn keymap(&self) -> String {
        // (XKB keycode, its keysyms by level); XKB's is the evdev code + 8.
        let mut keys: Vec<(u32, Vec<Keysym>)> = Vec::new();
        for (code, first, second) in US {
            let mut levels = vec![char_keysym(first)];
            if second != first {
                levels.push(char_keysym(second));
            }
            keys.push((code + 8, levels));
        }
        for (code, sym) in NAMED {
            keys.push((code + 8, vec![sym]));
        }
        for (index, sym) in self.extra.iter().enumerate() {
            keys.push((
                EXTRA_FIRST + 8 + u32::try_from(index).unwrap_or(0),
                vec![*sym],
            ));
        }
        keys.sort_by_key(|(keycode, _)| *keycode);
        let mut codes = String::new();
        let mut symbols = String::new();
        for (keycode, levels) in &keys {
            codes.push_str(&format!("    <K{keycode}> = {keycode};\n"));
            let named: Vec<String> = levels.iter().map(|sym| format!("{sym:#x}")).collect();
            symbols.push_str(&format!(
                "    key <K{keycode}> {{ [ {} ] }};\n",
                named.join(", ")
            ));
            if let Some((_, name)) = levels.first().and_then(|sym| modifier_bit(*sym)) {
                symbols.push_str(&format!("    modifier_map {name} {{ <K{keycode}> }};\n"));
            }
        }
        format!(
            "xkb_keymap {{\n  xkb_keycodes \"adk\" {{\n    minimum = 8;\n    maximum = 255;\n{codes}  }};\n  xkb_types \"adk\" {{ include \"complete\" }};\n  xkb_compatibility \"adk\" {{ include \"complete\" }};\n  xkb_symbols \"adk\" {{\n{symbols}  }};\n}};\n"
        )
    }
}

/// The keys that type `text`, one keysym per character.
pub(super) fn type_text(text: &str) -> Result<Keys, Refusal> {
    if text.chars().count() > MOST_TYPED {
        return Err(invalid(format!(
            "arguments.text is longer than {MOST_TYPED} characters"
        )));
    }
    if let Some(ch) = text
        .chars()
        .find(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return Err(invalid(format!("the character {ch:?} has no key")));
    }
    let mut builder = Builder::new();
    let mut events = Vec::new();
    for ch in text.chars() {
        let (code, shifted) = builder.key(char_keysym(ch))?;
        if shifted {
            events.extend([
                (SHIFT_CODE, true, 1),
                (code, true, 1),
                (code, false, 1),
                (SHIFT_CODE, false, 0),
            ]);
        } else {
            events.extend([(code, true, 0), (code, false, 0)]);
        }
    }
    Ok(Keys {
        keymap: builder.keymap(),
        events,
    })
}

/// A chord the compositor would take for itself rather than pass to the
/// target: sway applies its key bindings to a virtual keyboard too, and
/// they are made with Super (its default modifier), and Ctrl+Alt+F1..F12
/// switch virtual terminals. Such a chord is refused: its effect would be
/// the compositor's, outside the target that was checked.
fn reserved(chord: &str, pressed: &[(u32, Keysym)]) -> Result<(), Refusal> {
    let has = |wanted: &[Keysym]| pressed.iter().any(|(_, s)| wanted.contains(s));
    let function_key = pressed.iter().any(|(_, s)| (0xffbe..=0xffc9).contains(s));
    if has(&[0xffeb, 0xffec]) || (has(&[0xffe3, 0xffe4]) && has(&[0xffe9, 0xffea]) && function_key)
    {
        return Err(Refusal::new(
            "key_reserved_by_compositor",
            format!(
                "{chord:?} is a chord the compositor may take for itself (Super, or Ctrl+Alt+F-key): on Wayland it is not sent"
            ),
        ));
    }
    Ok(())
}

/// The keys of a chord such as `ctrl+shift+t` or `Return`: pressed in
/// order, released in reverse, the modifiers held while they are down.
pub(super) fn chord(chord: &str) -> Result<Keys, Refusal> {
    let names: Vec<&str> = chord.split('+').map(str::trim).collect();
    if names.is_empty() || names.iter().any(|n| n.is_empty()) || names.len() > 5 {
        return Err(invalid(format!(
            "arguments.text {chord:?} is not a key chord"
        )));
    }
    let mut builder = Builder::new();
    let mut pressed = Vec::new();
    for name in &names {
        let sym = named_keysym(name)
            .ok_or_else(|| invalid(format!("unknown key name {name:?} in {chord:?}")))?;
        let (code, shifted) = builder.key(sym)?;
        // A symbol on a key's second level is that key with Shift.
        if shifted && !pressed.iter().any(|(_, s)| *s == SHIFT_L) {
            pressed.push((SHIFT_CODE, SHIFT_L));
        }
        pressed.push((code, sym));
    }
    reserved(chord, &pressed)?;
    let mut events = Vec::new();
    let mut mask = 0;
    for &(code, sym) in &pressed {
        if is_modifier(sym) {
            mask |= modifier_bit(sym).map_or(0, |(bit, _)| bit);
        }
        events.push((code, true, mask));
    }
    for &(code, sym) in pressed.iter().rev() {
        if is_modifier(sym) {
            mask &= !modifier_bit(sym).map_or(0, |(bit, _)| bit);
        }
        events.push((code, false, mask));
    }
    Ok(Keys {
        keymap: builder.keymap(),
        events,
    })
}

/// `ctrl+a` (all of a field's text selected), then the keys that type
/// `text`, so that the text replaces what the focused field held. Ctrl
/// and "a" are among the keys every keymap starts with ([`base`]), so they
/// have the same codes on the keymap that types `text`.
pub(super) fn replace_text(text: &str) -> Result<Keys, Refusal> {
    let select = chord("ctrl+a")?;
    let typed = type_text(text)?;
    let mut events = select.events;
    events.extend(typed.events);
    Ok(Keys {
        keymap: typed.keymap,
        events,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;

    #[test]
    fn select_all_keeps_its_codes_on_the_keymap_that_types_the_text() {
        // Ctrl and "a" on a fresh keymap, and on one that has grown for
        // characters outside US ASCII: the same codes.
        let ctrl = named_keysym("ctrl").expect("ctrl");
        let a = char_keysym('a');
        let mut fresh = Builder::new();
        let mut grown = Builder::new();
        grown.key(char_keysym('é')).expect("é");
        grown.key(char_keysym('ж')).expect("ж");
        assert_eq!(
            fresh.key(ctrl).expect("ctrl"),
            grown.key(ctrl).expect("ctrl")
        );
        assert_eq!(fresh.key(a).expect("a"), grown.key(a).expect("a"));
        let replaced = replace_text("é!").expect("typed");
        assert_eq!(replaced.keymap, type_text("é!").expect("typed").keymap);
        // ctrl+a (4), é (2), ! with Shift (4).
        assert_eq!(replaced.events.len(), 4 + 2 + 4);
    }

    #[test]
    fn characters_are_typed_on_the_us_keys_with_shift_for_the_second_level() {
        let keys = type_text("Aa -;").expect("typed");
        assert_eq!(
            keys.events,
            vec![
                (SHIFT_CODE, true, 1),
                (30, true, 1),
                (30, false, 1),
                (SHIFT_CODE, false, 0),
                (30, true, 0),
                (30, false, 0),
                // The space on the space bar, never on another key's code
                // (Chromium dropped a space sent on Escape's).
                (57, true, 0),
                (57, false, 0),
                (12, true, 0),
                (12, false, 0),
                (39, true, 0),
                (39, false, 0),
            ]
        );
        assert!(keys.keymap.contains("key <K38> { [ 0x61, 0x41 ] };"));
        assert!(keys.keymap.contains("key <K65> { [ 0x20 ] };"));
        assert!(keys.keymap.contains("key <K9> { [ 0xff1b ] };"));
        let lines = type_text("a\tb\n").expect("typed");
        assert_eq!(lines.events[2], (15, true, 0));
        assert_eq!(lines.events[6], (28, true, 0));
    }

    #[test]
    fn ascii_text_and_named_keys_share_one_keymap_and_other_text_extends_it() {
        let plain = type_text("Ada L. <ada@example.org>").expect("typed");
        let tab = chord("Tab").expect("chord");
        let chord_keys = chord("ctrl+shift+F5").expect("chord");
        assert_eq!(plain.keymap, tab.keymap);
        assert_eq!(plain.keymap, chord_keys.keymap);
        let accented = type_text("é").expect("typed");
        assert_ne!(accented.keymap, plain.keymap);
        assert_eq!(accented.events[0].0, EXTRA_FIRST);
        assert!(
            accented
                .keymap
                .contains(&format!("key <K{}> {{ [ 0xe9 ] }};", EXTRA_FIRST + 8))
        );
    }

    #[test]
    fn a_chord_holds_its_modifiers_until_they_are_released() {
        let keys = chord("ctrl+shift+t").expect("chord");
        let (ctrl, shift, t) = (29, SHIFT_CODE, 20);
        assert_eq!(
            keys.events,
            vec![
                (ctrl, true, 4),
                (shift, true, 5),
                (t, true, 5),
                (t, false, 5),
                (shift, false, 4),
                (ctrl, false, 0)
            ]
        );
        assert!(
            keys.keymap
                .contains(&format!("modifier_map Control {{ <K{}> }};", ctrl + 8))
        );
        assert!(
            keys.keymap
                .contains(&format!("modifier_map Shift {{ <K{}> }};", shift + 8))
        );
        assert!(chord("ctrl+nonsense").is_err());
        for taken in ["super+Return", "cmd+shift+q", "ctrl+alt+F2"] {
            let refused = chord(taken).expect_err(taken);
            assert_eq!(refused.code, "key_reserved_by_compositor", "{taken}");
        }
        assert!(chord("ctrl+alt+t").is_ok() && chord("F2").is_ok());
        assert!(chord("ctrl++").is_err());
        assert!(type_text("\u{7}").is_err());
    }
}
