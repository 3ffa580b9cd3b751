// Invariant: a preview enters the chain only after it was bound to the
// session and found fresh; `FreshPreview` has private fields, so a struct
// literal is refused (E0451).
use adk_computer_use::contracts::ActionPreview;
use adk_computer_use::protocol::FreshPreview;

fn forge(preview: ActionPreview) -> FreshPreview {
    FreshPreview {
        preview: Box::new(preview),
        retained: None,
    }
}

fn main() {}
