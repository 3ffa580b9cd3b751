//! Which characters a person is never shown raw, on the page or by `show`.
//!
//! An agent's text can carry characters that draw nothing (Unicode's tag
//! characters spell a whole instruction zero pixels wide) or that change
//! how the text around them is drawn (a right-to-left override turns
//! `note\u{202E}txt.exe` into `noteexe.txt`). A person approving such text
//! would approve words they never saw. The set is taken from Unicode's own
//! properties (through ICU4X's compiled data, the tables browsers and
//! ICU share), not from a hand list, so that a character Unicode adds to
//! them is escaped without a change here.

use icu_properties::props::{
    CanonicalCombiningClass, DefaultIgnorableCodePoint, GeneralCategory, GeneralCategoryGroup,
};
use icu_properties::{CodePointMapData, CodePointSetData};

/// The general categories shown escaped: format characters (Cf: bidi
/// controls, tags, zero-width joiners), line and paragraph separators
/// (a break the page would not show as one), private use (drawn by no
/// standard font, so as anything a font chooses), surrogates and
/// unassigned code points (drawn as nothing, or as whatever a newer font
/// makes of them).
const ESCAPED: GeneralCategoryGroup = GeneralCategoryGroup::Format
    .union(GeneralCategoryGroup::LineSeparator)
    .union(GeneralCategoryGroup::ParagraphSeparator)
    .union(GeneralCategoryGroup::PrivateUse)
    .union(GeneralCategoryGroup::Surrogate)
    .union(GeneralCategoryGroup::Unassigned);

/// Whether `c` is shown escaped: a control character, a default-ignorable
/// code point (Unicode's list of characters a renderer draws as nothing
/// when it cannot show them: variation selectors, fillers, tags, the
/// combining grapheme joiner), or of a general category in [`ESCAPED`].
pub(crate) fn hidden(c: char) -> bool {
    c.is_control()
        || CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
        || ESCAPED.contains(CodePointMapData::<GeneralCategory>::new().get(c))
}

/// The one character drawn as a blank that no Unicode property names:
/// U+2800 BRAILLE PATTERN BLANK, a symbol (So) whose glyph is an empty
/// cell, so text made of it reads as nothing or as spaces.
const BLANK_SYMBOL: char = '\u{2800}';

/// How many combining marks one letter carries raw: enough for every
/// script's stacked diacritics (Vietnamese two, Hebrew with points and a
/// cantillation mark three or four), past which further marks draw over
/// the lines above and below.
const MOST_MARKS: usize = 4;

/// `text` as a person is shown it: each character of [`hidden`], the
/// blank symbol, and what changes how a number or a word reads without a
/// sign of it, written as its `\u{…}` escape:
/// - a combining mark that does not sit on a letter (a mark on a digit, a
///   sign or a space: U+0338 strikes a digit through), every enclosing mark
///   (a box or a circle drawn over what it follows), every overlay mark
///   (canonical combining class Overlay: a stroke through a letter, which
///   makes a word read as struck out), and marks stacked past
///   [`MOST_MARKS`] on one letter;
/// - a space other than U+0020 (general category Zs: no-break, ideographic,
///   figure and Ogham spaces look like a space, or like nothing, and are not
///   one to a program);
/// - a decimal digit other than ASCII's (an Arabic-Indic zero is drawn as
///   a dot, a Bengali four as an 8): a number is shown in ASCII digits or
///   escaped;
/// - a backslash before `u`, so that no text can spell one of these
///   escapes: every `\u{…}` on the page is the page's own.
pub(crate) fn escape(text: &str) -> String {
    let category = CodePointMapData::<GeneralCategory>::new();
    let combining = CodePointMapData::<CanonicalCombiningClass>::new();
    let mut chars = text.chars().peekable();
    let mut shown = String::with_capacity(text.len());
    // Whether the last character shown raw that was not a mark is a
    // letter, and how many marks it carries raw.
    let (mut on_letter, mut marks) = (false, 0usize);
    while let Some(c) = chars.next() {
        let group = category.get(c);
        let mark = GeneralCategoryGroup::Mark.contains(group);
        // A digit of another system than ASCII's: a Bengali four reads as
        // 8, an Arabic-Indic zero as a dot.
        let foreign_digit = group == GeneralCategory::DecimalNumber && !c.is_ascii_digit();
        let raw = if hidden(c)
            || c == BLANK_SYMBOL
            || foreign_digit
            || (group == GeneralCategory::SpaceSeparator && c != ' ')
            || (c == '\\' && chars.peek() == Some(&'u'))
        {
            false
        } else if mark {
            on_letter
                && group != GeneralCategory::EnclosingMark
                && combining.get(c) != CanonicalCombiningClass::Overlay
                && marks < MOST_MARKS
        } else {
            true
        };
        if raw {
            if mark {
                marks += 1;
            } else {
                on_letter = GeneralCategoryGroup::Letter.contains(group);
                marks = 0;
            }
            shown.push(c);
        } else {
            // An escape is drawn as letters of its own: nothing after it
            // sits on what came before it.
            on_letter = false;
            shown.extend(c.escape_unicode());
        }
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code point of the properties, over the whole of Unicode, is
    /// shown escaped by `safe`, and nothing else is (a combining mark
    /// alone, with no letter under it, is escaped as well, as are the
    /// blank symbol, every space but U+0020 and every decimal digit but
    /// ASCII's).
    #[test]
    fn every_code_point_of_the_properties_is_escaped_and_no_other() {
        let ignorable = CodePointSetData::new::<DefaultIgnorableCodePoint>();
        let category = CodePointMapData::<GeneralCategory>::new();
        let (mut escaped, mut kept) = (0u32, 0u32);
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            let expected = c.is_control()
                || ignorable.contains(c)
                || matches!(
                    category.get(c),
                    GeneralCategory::Format
                        | GeneralCategory::LineSeparator
                        | GeneralCategory::ParagraphSeparator
                        | GeneralCategory::PrivateUse
                        | GeneralCategory::Unassigned
                        | GeneralCategory::NonspacingMark
                        | GeneralCategory::SpacingMark
                        | GeneralCategory::EnclosingMark
                )
                || c == '\u{2800}'
                || (category.get(c) == GeneralCategory::SpaceSeparator && c != ' ')
                || (category.get(c) == GeneralCategory::DecimalNumber && !c.is_ascii_digit());
            let shown = crate::safe(&c.to_string());
            if expected {
                escaped += 1;
                assert_eq!(
                    shown,
                    c.escape_unicode().to_string(),
                    "U+{:04X} is shown escaped",
                    c as u32
                );
            } else {
                kept += 1;
                assert_eq!(
                    shown,
                    c.to_string(),
                    "U+{:04X} is shown as itself",
                    c as u32
                );
            }
        }
        // Unicode 16: about 4,200 default-ignorable code points, 170 format
        // characters, 137,000 private-use and 820,000 unassigned ones.
        assert!(
            escaped > 900_000 && kept > 150_000,
            "{escaped} escaped, {kept} kept"
        );
    }

    /// The characters a hostile review hid text with, named one by one
    /// (not through the properties the code reads).
    #[test]
    fn the_characters_seen_hiding_text_are_escaped() {
        let ranges: [(u32, u32, &str); 16] = [
            (0xE0000, 0xE007F, "tag characters"),
            (0x034F, 0x034F, "combining grapheme joiner"),
            (0xFE00, 0xFE0F, "variation selectors"),
            (0xE0100, 0xE01EF, "variation selectors supplement"),
            (0x1D173, 0x1D17A, "musical format characters"),
            (0x17B4, 0x17B5, "Khmer inherent vowels"),
            (0x115F, 0x1160, "Hangul fillers"),
            (0x3164, 0x3164, "Hangul filler"),
            (0xFFA0, 0xFFA0, "halfwidth Hangul filler"),
            (0x200B, 0x200F, "zero-width characters and marks"),
            (0x202A, 0x202E, "bidi embeddings and overrides"),
            (0x2066, 0x2069, "bidi isolates"),
            (0x061C, 0x061C, "Arabic letter mark"),
            (0x00AD, 0x00AD, "soft hyphen"),
            (0xFEFF, 0xFEFF, "byte order mark"),
            (0x2028, 0x2029, "line and paragraph separators"),
        ];
        for (first, last, name) in ranges {
            for c in (first..=last).filter_map(char::from_u32) {
                assert!(hidden(c), "U+{:04X} ({name}) is shown escaped", c as u32);
            }
        }
        for visible in ['a', ' ', 'é', '\u{05D0}', '\u{0628}', '中', '😀', '€', '1'] {
            assert!(!hidden(visible), "{visible:?} is shown as itself");
        }
    }

    /// Marks that change how a number reads, and the blank symbol, are
    /// escaped; a script's own marks on its letters are not.
    #[test]
    fn marks_off_letters_and_the_blank_symbol_are_escaped() {
        let escaped = [
            (
                "10\u{338} 0",
                "10\\u{338} 0",
                "a solidus struck through a digit",
            ),
            ("1\u{20E3}", "1\\u{20e3}", "a keycap enclosing a digit"),
            ("a\u{20DD}", "a\\u{20dd}", "an enclosing circle on a letter"),
            ("\u{301}x", "\\u{301}x", "a mark with nothing under it"),
            (" \u{336}", " \\u{336}", "a mark on a space"),
            ("9\u{307}", "9\\u{307}", "a dot above a digit"),
            ("\u{2800}\u{2800}", "\\u{2800}\\u{2800}", "braille blanks"),
            (
                "e\u{301}\u{302}\u{303}\u{304}\u{305}\u{306}",
                "e\u{301}\u{302}\u{303}\u{304}\\u{305}\\u{306}",
                "a stack past four marks on one letter",
            ),
            (
                "\u{200B}\u{301}",
                "\\u{200b}\\u{301}",
                "a mark after an escape",
            ),
            (
                "to B\u{336}o\u{336}b Alice",
                "to B\\u{336}o\\u{336}b Alice",
                "a stroke through letters",
            ),
            ("O\u{338}", "O\\u{338}", "a solidus through a letter"),
            (
                "l\u{20E5}",
                "l\\u{20e5}",
                "a reverse solidus through a letter",
            ),
            (
                "pay 1\u{660}000 USD",
                "pay 1\\u{660}000 USD",
                "an Arabic-Indic zero among digits",
            ),
            ("1,\u{9EA}", "1,\\u{9ea}", "a Bengali four after a comma"),
            (
                "\u{9EA}\u{9E6}\u{9E6}",
                "\\u{9ea}\\u{9e6}\\u{9e6}",
                "a whole Bengali number",
            ),
            ("ok\u{3000}rm", "ok\\u{3000}rm", "an ideographic space"),
            ("a\u{1680}b", "a\\u{1680}b", "an Ogham space"),
            (
                "x\u{A0}\u{2007}\u{202F}y",
                "x\\u{a0}\\u{2007}\\u{202f}y",
                "no-break and figure spaces",
            ),
            (
                "a \\u{202e} b",
                "a \\u{5c}u{202e} b",
                "an escape spelled by the text",
            ),
        ];
        for (text, shown, what) in escaped {
            assert_eq!(escape(text), shown, "{what}");
        }
        for kept in [
            "caf\u{E9}",
            "cafe\u{301}",
            "Vi\u{1EC7}t",
            "vie\u{323}\u{302}t",
            "\u{5E9}\u{5C1}\u{5B8}\u{5DC}\u{5D5}\u{5B9}\u{5DD}",
            "\u{928}\u{92E}\u{938}\u{94D}\u{924}\u{947}",
            "\u{645}\u{64E}\u{631}\u{652}\u{62D}\u{64E}\u{628}\u{64B}\u{627}",
            "transfer 100 EUR",
            "C:\\Users\\ada",
        ] {
            assert_eq!(escape(kept), kept, "{kept:?} is shown as written");
        }
    }
}
