//! Key names and characters as keysyms, shared by the desktops that send
//! keys (X11 through XTEST, Wayland through a virtual keyboard): the same
//! chord names one key on both, and a character with no keysym is refused
//! the same way.

/// A keysym, as X11 and XKB number them.
pub type Keysym = u32;

/// The left Shift key.
pub const SHIFT_L: Keysym = 0xffe1;

/// The keysym of a character: Latin-1 maps to itself, the rest to
/// `0x0100_0000 + code point`; newline and tab to their keys.
pub fn char_keysym(ch: char) -> Keysym {
    match ch {
        '\n' | '\r' => 0xff0d,
        '\t' => 0xff09,
        ' '..='~' | '\u{a0}'..='\u{ff}' => u32::from(ch),
        other => 0x0100_0000 + u32::from(other),
    }
}

/// The keysym of a key name, case-insensitively for the usual names.
pub fn named_keysym(name: &str) -> Option<Keysym> {
    let lower = name.to_ascii_lowercase();
    let sym = match lower.as_str() {
        "ctrl" | "control" | "control_l" => 0xffe3,
        "shift" | "shift_l" => SHIFT_L,
        "alt" | "alt_l" | "option" => 0xffe9,
        "super" | "super_l" | "meta" | "cmd" | "command" | "win" => 0xffeb,
        "return" | "enter" => 0xff0d,
        "tab" => 0xff09,
        "escape" | "esc" => 0xff1b,
        "backspace" => 0xff08,
        "delete" | "del" => 0xffff,
        "home" => 0xff50,
        "end" => 0xff57,
        "page_up" | "pageup" | "prior" => 0xff55,
        "page_down" | "pagedown" | "next" => 0xff56,
        "left" => 0xff51,
        "up" => 0xff52,
        "right" => 0xff53,
        "down" => 0xff54,
        "space" => 0x20,
        "insert" => 0xff63,
        _ => {
            if let Some(n) = lower.strip_prefix('f').and_then(|n| n.parse::<u32>().ok())
                && (1..=12).contains(&n)
            {
                return Some(0xffbd + n);
            }
            let mut chars = name.chars();
            return match (chars.next(), chars.next()) {
                (Some(ch), None) => Some(char_keysym(ch.to_ascii_lowercase())),
                _ => None,
            };
        }
    };
    Some(sym)
}

/// Whether `sym` is a modifier key (Shift, Control, Alt, Super, both
/// sides): held for the rest of a chord rather than tapped.
pub fn is_modifier(sym: Keysym) -> bool {
    (0xffe1..=0xffee).contains(&sym)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chord_names_and_characters_are_the_keysyms_xkb_gives_them() {
        assert_eq!(named_keysym("Return"), Some(0xff0d));
        assert_eq!(named_keysym("ctrl"), Some(0xffe3));
        assert_eq!(named_keysym("F12"), Some(0xffc9));
        assert_eq!(named_keysym("a"), Some(u32::from('a')));
        assert_eq!(named_keysym("A"), Some(u32::from('a')));
        assert_eq!(named_keysym("nonsense"), None);
        assert_eq!(char_keysym('é'), 0xe9);
        assert_eq!(char_keysym('€'), 0x0100_20ac);
        assert!(is_modifier(SHIFT_L) && !is_modifier(0xff0d));
    }
}
