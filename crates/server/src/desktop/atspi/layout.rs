//! A field without a label of its own takes the label beside it, as a
//! person reads a form: a label of the same parent, on the field's line,
//! ending left of it and at most [`NEAR`] pixels away; the nearest one.
//!
//! Why a file of its own: a window of thousands of rows is one parent of
//! thousands of labels and fields (a settings list, a spreadsheet-like
//! form), and asking every label about every field is a square of them
//! (25 million pairs at 5,000 rows, seconds of the call's budget). The
//! labels are sorted by their top edge once per parent, and a field looks
//! only at the labels whose top lies within the tallest label's height
//! above its middle: a row's own labels, in a form laid out in rows.
//! An application can still make that window wide (one label as tall as
//! the screen puts every label in it), so the pairs looked at are counted
//! ([`MAX_PAIRS`] for a whole tree); past that, the remaining fields keep
//! no layout label, and `Tree::labels_cut` says so (an action in such a
//! window is refused as `tree_too_large`, naming this cause).

use super::is_field;
use super::toolkit::Toolkit;
use super::tree::Node;

/// How far left of a field its label may end, in pixels.
const NEAR: i64 = 200;

/// The most (label, field) pairs one tree's layout pass looks at. A form
/// laid out in rows looks at a few per field, so a 10,000-node window is
/// far inside it; only a layout built to defeat the search reaches it.
const MAX_PAIRS: usize = 4_000_000;

/// A label that may name a field: its index, bounds in 64 bits (an
/// application's bounds are any `i32` at all) and its place among its
/// siblings (the later one wins a tie, as a person reads left to right).
struct Candidate {
    index: usize,
    top: i64,
    bottom: i64,
    right: i64,
    order: usize,
}

/// Gives each field without a label the label beside it. Returns whether
/// the pass stopped at [`MAX_PAIRS`] with fields left unlabelled.
pub(super) fn label_from_layout(nodes: &mut [Node], toolkit: &Toolkit) -> bool {
    let mut budget = MAX_PAIRS;
    for parent in 0..nodes.len() {
        let Some(children) = nodes.get(parent).map(|p| p.children.clone()) else {
            continue;
        };
        let found = labels_of(nodes, &children, toolkit);
        if found.is_empty() {
            continue;
        }
        let tallest = found
            .iter()
            .map(|c| c.bottom - c.top)
            .max()
            .unwrap_or(0)
            .max(0);
        for &field in &children {
            let Some(f) = nodes.get(field) else { continue };
            if !f.label.is_empty() || !is_field(&f.atspi_role) {
                continue;
            }
            let (x, y, _, h) = f.bounds;
            let (left, middle) = (i64::from(x), i64::from(y) + i64::from(h) / 2);
            // Labels whose top is in [middle - tallest, middle]: the only
            // ones that can reach down to the field's middle.
            let from = found.partition_point(|c| c.top < middle - tallest);
            let to = found.partition_point(|c| c.top <= middle);
            let looked = to.saturating_sub(from);
            if looked > budget {
                return true;
            }
            budget -= looked;
            let beside = found
                .get(from..to)
                .unwrap_or_default()
                .iter()
                .filter(|c| middle <= c.bottom && c.right <= left + 2 && left - c.right <= NEAR)
                .max_by_key(|c| (c.right, c.order))
                .map(|c| c.index);
            let Some(label) = beside.and_then(|i| nodes.get(i)).map(|n| n.label.clone()) else {
                continue;
            };
            if let Some(f) = nodes.get_mut(field) {
                f.label = label;
                f.labelled_apart = true;
            }
        }
    }
    false
}

/// The shown, named labels among `children`, by their top edge.
fn labels_of(nodes: &[Node], children: &[usize], toolkit: &Toolkit) -> Vec<Candidate> {
    let mut found: Vec<Candidate> = children
        .iter()
        .enumerate()
        .filter_map(|(order, &i)| nodes.get(i).map(|n| (order, i, n)))
        .filter(|(_, _, n)| n.atspi_role == "label" && !n.label.is_empty() && toolkit.shown(n))
        .map(|(order, index, n)| {
            let (x, y, w, h) = n.bounds;
            let (x, y, w, h) = (i64::from(x), i64::from(y), i64::from(w), i64::from(h));
            Candidate {
                index,
                top: y,
                bottom: y + h,
                right: x + w,
                order,
            }
        })
        .collect();
    found.sort_by_key(|c| c.top);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(role: &str, name: &str, bounds: (i32, i32, i32, i32)) -> Node {
        Node {
            path: Vec::new(),
            atspi_role: role.into(),
            role: crate::desktop::atspi::ax_role(role, false),
            name: name.into(),
            label: name.into(),
            labelled_apart: false,
            description: String::new(),
            value: Some(String::new()),
            secure: false,
            bounds,
            actions: Vec::new(),
            states: vec!["enabled".into(), "showing".into()],
            children: Vec::new(),
        }
    }

    /// A window whose one parent holds `rows` rows of a label and a field.
    fn grid(rows: i32) -> Vec<Node> {
        let mut nodes = vec![node("frame", "Form", (0, 0, 800, 600))];
        for row in 0..rows {
            let y = row * 30;
            nodes.push(node("label", &format!("Row {row}"), (10, y, 80, 24)));
            nodes.push(node("text", "", (100, y, 200, 24)));
        }
        nodes[0].children = (1..nodes.len()).collect();
        nodes
    }

    #[test]
    fn every_field_of_a_five_thousand_row_form_takes_its_own_rows_label() {
        let mut nodes = grid(5_000);
        assert!(!label_from_layout(&mut nodes, &Toolkit::Gtk3));
        for row in 0..5_000usize {
            let field = &nodes[2 + 2 * row];
            assert_eq!(field.label, format!("Row {row}"));
            assert!(field.labelled_apart);
        }
    }

    #[test]
    fn the_nearest_label_on_the_line_wins_and_one_below_or_far_does_not() {
        let mut nodes = vec![
            node("frame", "Form", (0, 0, 800, 600)),
            node("label", "Far", (0, 0, 40, 24)),
            node("label", "Near", (250, 0, 40, 24)),
            node("label", "Below", (450, 40, 40, 24)),
            node("text", "", (300, 0, 200, 24)),
            node("label", "Too far", (0, 100, 40, 24)),
            node("text", "", (300, 100, 200, 24)),
        ];
        nodes[0].children = (1..nodes.len()).collect();
        label_from_layout(&mut nodes, &Toolkit::Gtk3);
        assert_eq!(nodes[4].label, "Near");
        assert_eq!(nodes[6].label, "", "a label 260 px away names nothing");
    }

    // Resolving an action needs the element layer of a real desktop.
    #[cfg(any(feature = "x11", feature = "wayland"))]
    #[test]
    fn a_layout_built_to_defeat_the_search_is_cut_and_an_action_in_it_refused() {
        use super::super::tree::Tree;
        // One label as tall as the window puts every label in every
        // field's window of labels: 3,000 fields × 3,001 labels.
        let mut nodes = grid(3_000);
        nodes.push(node("label", "Tall", (10, -10, 80, 100_000)));
        let tall = nodes.len() - 1;
        nodes[0].children.push(tall);
        let tree = Tree::new(nodes, false, Toolkit::Gtk3);
        assert!(tree.labels_cut);
        let wanted = super::super::resolve::Wanted {
            role: None,
            label: "Row 1",
            value: Some("x"),
        };
        let refused = super::super::resolve::resolve(&tree, &wanted)
            .err()
            .map(|r| r.code);
        assert_eq!(refused, Some("tree_too_large".into()));
    }
}
