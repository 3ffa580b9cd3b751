//! Keys on Wayland: a virtual keyboard brings its own keymap. Every keysym
//! an action needs gets a key of its own at the first level (no Shift is
//! ever needed to reach a character, and no layout of the seat's can alter
//! what arrives); the modifier keys of a chord are mapped to their
//! modifiers.
//!
//! A client takes a new keymap in its own time, and a key that reaches it
//! first is dropped (seen here with GTK on sway: the Tab after a change of
//! keymap went nowhere). So the keymap is the same for every action whose
//! keys are printable ASCII or named keys, and changes only for text that
//! needs more (the compositor connection waits for a changed keymap to
//! settle before it sends a key of it).

use crate::desktop::keys::{Keysym, char_keysym, is_modifier, named_keysym};
use crate::engine::Refusal;

/// Longest text `type` takes at once.
pub(super) const MOST_TYPED: usize = 4096;

/// Most distinct keysyms one action's keymap holds (XKB keycodes run to
/// 255; the first is 9).
const MOST_KEYS: usize = 240;

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

/// The keys every keymap starts with, in this order: printable ASCII,
/// then the named keys of [`named_keysym`].
fn base() -> Vec<Keysym> {
    let mut syms: Vec<Keysym> = (0x20..=0x7e).collect();
    for name in [
        "ctrl",
        "shift",
        "alt",
        "super",
        "return",
        "tab",
        "escape",
        "backspace",
        "delete",
        "home",
        "end",
        "page_up",
        "page_down",
        "left",
        "up",
        "right",
        "down",
        "insert",
    ] {
        if let Some(sym) = named_keysym(name) {
            syms.push(sym);
        }
    }
    syms.extend((1..=12).map(|n| 0xffbd + n));
    syms
}

struct Builder {
    syms: Vec<Keysym>,
}

impl Builder {
    fn new() -> Self {
        Self { syms: base() }
    }

    fn code(&mut self, sym: Keysym) -> Result<u32, Refusal> {
        let index = match self.syms.iter().position(|s| *s == sym) {
            Some(index) => index,
            None => {
                if self.syms.len() >= MOST_KEYS {
                    return Err(invalid(format!(
                        "the text needs more than {MOST_KEYS} distinct keys"
                    )));
                }
                self.syms.push(sym);
                self.syms.len() - 1
            }
        };
        // XKB keycode 9 + index; the evdev code the protocol takes is 8 less.
        Ok(u32::try_from(index).unwrap_or(0) + 1)
    }

    fn keymap(&self) -> String {
        let mut codes = String::new();
        let mut symbols = String::new();
        for (index, sym) in self.syms.iter().enumerate() {
            let keycode = index + 9;
            codes.push_str(&format!("    <K{keycode}> = {keycode};\n"));
            symbols.push_str(&format!("    key <K{keycode}> {{ [ {sym:#x} ] }};\n"));
            if let Some((_, name)) = modifier_bit(*sym) {
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
        let code = builder.code(char_keysym(ch))?;
        events.push((code, true, 0));
        events.push((code, false, 0));
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
        pressed.push((builder.code(sym)?, sym));
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

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;

    #[test]
    fn each_character_gets_its_own_first_level_key_and_repeats_reuse_it() {
        let keys = type_text("Aa A").expect("typed");
        assert_eq!(keys.events.len(), 8);
        // Keycode 9 + (sym - 0x20) for printable ASCII; evdev is 8 less.
        let code = |ch: char| u32::from(ch) - 0x20 + 1;
        assert_eq!(keys.events[0], (code('A'), true, 0));
        assert_eq!(keys.events[2], (code('a'), true, 0));
        assert_eq!(keys.events[6], (code('A'), true, 0));
        assert!(keys.keymap.contains("key <K42> { [ 0x41 ] };"));
        assert!(keys.keymap.contains("key <K74> { [ 0x61 ] };"));
        assert!(keys.keymap.contains("key <K9> { [ 0x20 ] };"));
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
        assert!(
            accented
                .keymap
                .starts_with(&plain.keymap[..plain.keymap.find("  };").expect("codes")])
        );
        assert_eq!(
            accented.events[0].0,
            u32::try_from(base().len()).expect("small") + 1
        );
    }

    #[test]
    fn a_chord_holds_its_modifiers_until_they_are_released() {
        let keys = chord("ctrl+shift+t").expect("chord");
        let base = base();
        let code = |sym: Keysym| {
            u32::try_from(base.iter().position(|s| *s == sym).expect("in the base")).expect("small")
                + 1
        };
        let (ctrl, shift, t) = (code(0xffe3), code(0xffe1), code(u32::from('t')));
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
