//! The one rule by which an element's label is matched, shared by
//! `find_element`, every element action, the server's sensitivity check and
//! the simulated desktop, so that what a plan finds is what an action
//! resolves.
//!
//! The rule, in order:
//!
//! 1. Both sides are normalised: every run of Unicode whitespace becomes
//!    one space, the ends are trimmed, and the text is lower-cased
//!    ([`normalise`]). "Save  As…" and "save as…" are the same label.
//! 2. An element whose label equals the wanted label, so normalised, is an
//!    **exact** match. When any element matches exactly, only the exact
//!    matches count.
//! 3. Otherwise an element whose label *contains* the wanted label is a
//!    **partial** match. A search (`find_element`) lists every partial
//!    match, each marked so; an action accepts a partial match only when
//!    it is the only one.
//!
//! An element is matched by its one label (what a person reads, and what a
//! server digests into the tree's revision): never by its description or
//! another name, which could change between a preview and its execution
//! without the revision moving.

/// How a label matched the wanted one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LabelMatch {
    /// The wanted label appears inside the element's label.
    Partial,
    /// The labels are equal once normalised.
    Exact,
}

impl LabelMatch {
    /// The name a search answer marks a match with (`exact`, `partial`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Partial => "partial",
            Self::Exact => "exact",
        }
    }
}

/// `text` with every run of whitespace made one space, trimmed at both
/// ends, lower-cased.
pub fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// How `label` (an element's) matches `wanted` (already [`normalise`]d),
/// if at all. An empty wanted label matches only an empty label, exactly
/// (the one unlabelled text area of an editor is named so).
pub fn label_match(label: &str, wanted: &str) -> Option<LabelMatch> {
    let label = normalise(label);
    if wanted.is_empty() {
        return label.is_empty().then_some(LabelMatch::Exact);
    }
    if label == wanted {
        Some(LabelMatch::Exact)
    } else if label.contains(wanted) {
        Some(LabelMatch::Partial)
    } else {
        None
    }
}

/// The items of `candidates` a search for `wanted` finds, by the rule:
/// the exact matches when there is any, else every partial one; each with
/// how it matched, in the candidates' order.
pub fn search<T>(candidates: impl IntoIterator<Item = (T, LabelMatch)>) -> Vec<(T, LabelMatch)> {
    let all: Vec<(T, LabelMatch)> = candidates.into_iter().collect();
    if all.iter().any(|(_, m)| *m == LabelMatch::Exact) {
        all.into_iter()
            .filter(|(_, m)| *m == LabelMatch::Exact)
            .collect()
    } else {
        all
    }
}

/// What an action may act on, by the rule: the one exact match; or, with
/// no exact match, the one partial match. Anything else is no element
/// (`Err(0)`) or too many (`Err(n)`).
pub fn resolve_one<T>(candidates: impl IntoIterator<Item = (T, LabelMatch)>) -> Result<T, usize> {
    let mut found = search(candidates);
    match found.len() {
        1 => Ok(found.remove(0).0),
        n => Err(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_and_case_do_not_count() {
        assert_eq!(normalise("  Save\u{a0} As\t…  "), "save as …");
        assert_eq!(label_match("SAVE", "save"), Some(LabelMatch::Exact));
        assert_eq!(label_match("Save As", "save"), Some(LabelMatch::Partial));
        assert_eq!(label_match("Open", "save"), None);
        assert_eq!(label_match("Open", ""), None);
        assert_eq!(label_match(" ", ""), Some(LabelMatch::Exact));
    }

    #[test]
    fn an_exact_match_hides_the_partial_ones() {
        let found = resolve_one([
            ("save as", LabelMatch::Partial),
            ("save", LabelMatch::Exact),
        ]);
        assert_eq!(found, Ok("save"));
    }

    #[test]
    fn a_partial_match_counts_only_alone() {
        assert_eq!(resolve_one([("1 1", LabelMatch::Partial)]), Ok("1 1"));
        assert_eq!(
            resolve_one([("1 1", LabelMatch::Partial), ("11", LabelMatch::Partial)]),
            Err(2)
        );
        assert_eq!(resolve_one::<&str>([]), Err(0));
        assert_eq!(
            resolve_one([("a", LabelMatch::Exact), ("b", LabelMatch::Exact)]),
            Err(2)
        );
    }
}
