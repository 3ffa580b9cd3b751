// Invariant: a preview enters the chain only after it was bound to the
// session and found fresh; its witness `FreshPreview` is private to the
// crate, so code outside cannot name it, let alone build one (E0603).
use adk_computer_use::contracts::ActionPreview;
use adk_computer_use::chain::witness::FreshPreview;

fn forge(preview: ActionPreview) -> FreshPreview {
    FreshPreview {
        preview: Box::new(preview),
        retained: None,
    }
}

fn main() {}
