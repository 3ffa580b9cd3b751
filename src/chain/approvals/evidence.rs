//! Fresh target evidence for an approval given late.
//!
//! A person approves an action on a target. The runtime accepts evidence
//! of that target only while it is young (upstream refuses evidence older
//! than 30 s at execution, `stale_target`), and a person may take minutes
//! to decide. So when the evidence an approval rests on has aged, the
//! target is looked at again and the same action is previewed on the fresh
//! evidence. The approval carries over only when the fresh evidence shows
//! the same target with nothing but its pixels changed: the same
//! application, process, window, title, display and element, the same UI
//! tree revision, and bounds within a few pixels. Anything else means the
//! person approved something that is no longer there, and must be asked
//! again.
//!
//! Both sides use this one comparison: the approver's connection when it
//! asks a grant for a late approval (the grant then names the fresh
//! preview), and the agent's session when it resumes (it checks the
//! approver's fresh evidence again, or takes its own for an approval the
//! runtime holds).

use std::time::Duration;

use time::OffsetDateTime;

use super::checkpoint::{CheckpointBody, CheckpointId};
use super::refusal::CheckpointRefusal;
use crate::ComputerUseError;
use crate::contracts::{ActionPreview, Bounds, TargetEvidence};
use crate::runtime::{ComputerUseRuntime, ObservationScope, Observations, PreviewAnswer};

/// How old target evidence may be when an action executes, unless the
/// session or approver is told otherwise: upstream's `maxTargetAgeMs`.
pub const DEFAULT_TARGET_EVIDENCE_MAX_AGE: Duration = Duration::from_secs(30);

/// How far a window may have moved or grown, per edge, and still be the
/// window the person approved: the tolerance upstream's revalidation allows.
pub const BOUNDS_TOLERANCE_PX: f64 = 4.0;

/// How old `target`'s evidence is at `now`. Evidence whose capture time
/// does not parse, or lies ahead of `now` by more than a second, counts as
/// older than any limit: it is never trusted as fresh.
pub(crate) fn age(target: &TargetEvidence, now: OffsetDateTime) -> Duration {
    match crate::clock::parse_rfc3339("TargetEvidence", "capturedAt", &target.captured_at) {
        Ok(at) if at <= now => (now - at).try_into().unwrap_or(Duration::MAX),
        Ok(at) if at - now <= time::Duration::SECOND => Duration::ZERO,
        _ => Duration::MAX,
    }
}

/// Whether evidence should be taken again before an approval of it is
/// used: once it is half as old as the runtime accepts, so what is left
/// is time to reserve, lease and execute.
pub(crate) fn needs_fresh(target: &TargetEvidence, now: OffsetDateTime, max_age: Duration) -> bool {
    age(target, now) >= max_age / 2
}

/// The age as whole milliseconds, for a refusal.
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// [`same_target`] for checkpoint `id`, whose sealed evidence is `sealed`:
/// a checkpoint sealed without evidence has no target fresh evidence could
/// show again.
pub(crate) fn same_as_sealed_target(
    id: &CheckpointId,
    tool: &str,
    sealed: Option<&TargetEvidence>,
    fresh: &TargetEvidence,
) -> Result<(), ComputerUseError> {
    let refusal = match sealed {
        Some(sealed) => same_target(tool, sealed, fresh).err(),
        None => Some(CheckpointRefusal::TargetChanged {
            field: "target",
            was: "none".into(),
            now: "evidence".into(),
        }),
    };
    refusal.map_or(Ok(()), |refusal| {
        Err(ComputerUseError::checkpoint(id, refusal))
    })
}

/// A tree revision as `tool` is bound to it: whole for a press (what it
/// submits is what the window's elements hold), and for every other tool
/// without the part that digests what the elements hold (the `+values-…`
/// part the desktop server adds), which a typed value moves.
fn revision_for<'r>(tool: &str, revision: Option<&'r str>) -> Option<&'r str> {
    use crate::contracts::catalogue::tool::{CLICK_ELEMENT, PRESS_BUTTON};
    let revision = revision?;
    if matches!(tool, PRESS_BUTTON | CLICK_ELEMENT) {
        return Some(revision);
    }
    Some(match revision.rfind("+values-") {
        Some(at) => &revision[..at],
        None => revision,
    })
}

/// Refuses unless `fresh` shows the target `approved` names with nothing
/// but its pixels changed (see the module's documentation), for an action
/// of `tool`.
pub(crate) fn same_target(
    tool: &str,
    approved: &TargetEvidence,
    fresh: &TargetEvidence,
) -> Result<(), CheckpointRefusal> {
    fn shown<T: std::fmt::Debug>(value: &T) -> String {
        format!("{value:?}")
    }
    let exact: [(&'static str, String, String); 8] = [
        (
            "platform",
            shown(&approved.platform),
            shown(&fresh.platform),
        ),
        ("appId", shown(&approved.app_id), shown(&fresh.app_id)),
        ("pid", shown(&approved.pid), shown(&fresh.pid)),
        (
            "windowId",
            shown(&approved.window_id),
            shown(&fresh.window_id),
        ),
        (
            "windowTitleDigest",
            shown(&approved.window_title_digest),
            shown(&fresh.window_title_digest),
        ),
        (
            "displayId",
            shown(&approved.display_id),
            shown(&fresh.display_id),
        ),
        ("role", shown(&approved.role), shown(&fresh.role)),
        (
            "labelDigest",
            shown(&approved.label_digest),
            shown(&fresh.label_digest),
        ),
    ];
    for (field, was, now) in exact {
        if was != now {
            return Err(CheckpointRefusal::TargetChanged { field, was, now });
        }
    }
    // A tree revision the approved evidence named must be there unchanged:
    // its structure is not pixels.
    let (was, now) = (
        revision_for(tool, approved.ui_tree_revision.as_deref()),
        revision_for(tool, fresh.ui_tree_revision.as_deref()),
    );
    if was.is_some() && was != now {
        return Err(CheckpointRefusal::TargetChanged {
            field: "uiTreeRevision",
            was: shown(&approved.ui_tree_revision),
            now: shown(&fresh.ui_tree_revision),
        });
    }
    if !bounds_agree(approved.bounds.as_ref(), fresh.bounds.as_ref()) {
        return Err(CheckpointRefusal::TargetChanged {
            field: "bounds",
            was: bounds_text(approved.bounds.as_ref()),
            now: bounds_text(fresh.bounds.as_ref()),
        });
    }
    Ok(())
}

fn bounds_agree(approved: Option<&Bounds>, fresh: Option<&Bounds>) -> bool {
    match (approved, fresh) {
        (None, None) => true,
        (Some(a), Some(b)) => [
            (a.x, b.x),
            (a.y, b.y),
            (a.width, b.width),
            (a.height, b.height),
        ]
        .iter()
        .all(|(was, now)| (was - now).abs() <= BOUNDS_TOLERANCE_PX),
        _ => false,
    }
}

fn bounds_text(bounds: Option<&Bounds>) -> String {
    bounds.map_or_else(
        || "(none)".to_owned(),
        |b| format!("{}x{} at ({}, {})", b.width, b.height, b.x, b.y),
    )
}

/// Looks at `approved`'s target again through `runtime`, in `session_id`,
/// as the approved evidence was taken (a window's UI tree when it named a
/// tree revision, else the window list), and derives fresh evidence for
/// the same application and window. `observed_at` stands in for a frame
/// that states no capture time.
pub(crate) async fn look_again<R: ComputerUseRuntime>(
    runtime: &R,
    session_id: &str,
    approved: &TargetEvidence,
    observed_at: &str,
) -> Result<TargetEvidence, ComputerUseError> {
    let scope = ObservationScope {
        session_id: session_id.to_owned(),
        tool: None,
        app_id: Some(approved.app_id.clone()),
        window_id: approved
            .ui_tree_revision
            .as_ref()
            .and(approved.window_id.clone()),
    };
    let (visual, semantic) = tokio::try_join!(
        runtime.observe_visual(&scope),
        runtime.observe_semantic(&scope),
    )?;
    let observations = Observations {
        capabilities: Vec::new(),
        visual,
        semantic,
    };
    observations.target_evidence(&approved.app_id, approved.window_id.as_ref(), observed_at)
}

/// The sealed action previewed again on `target` (fresh evidence of the
/// same target), in the sealed session, agent and group, through
/// `runtime`. The new preview must be bound to the request and show what
/// was sealed in every field but the times, the evidence and the digest
/// the evidence is part of ([`same_but_evidence`]).
pub(crate) async fn preview_on<R: ComputerUseRuntime>(
    runtime: &R,
    id: &CheckpointId,
    body: &CheckpointBody,
    target: TargetEvidence,
) -> Result<PreviewAnswer, ComputerUseError> {
    let mut action = super::refresh::proposal_of(id, body)?;
    action.target = Some(target);
    let request = super::refresh::sealed_request(body, &action);
    let answer = runtime.preview_action(&request).await?;
    crate::chain::proposal::bind_to_request(&request, &answer.preview.envelope)?;
    crate::chain::proposal::bind_capability(&answer.preview)?;
    same_but_evidence(id, &body.preview, &answer.preview)?;
    if answer.preview.envelope.target != action.target {
        return Err(ComputerUseError::IdentityMismatch {
            object: "ActionEnvelope",
            field: "target",
            expected: "the fresh evidence the action was previewed on".into(),
            actual: "other evidence".into(),
        });
    }
    Ok(answer)
}

/// A preview on fresh evidence shows the sealed action: the envelope and
/// policy as sealed, but for the times, the target evidence (which must be
/// the same target, [`same_target`]) and the action digest, which covers
/// the evidence.
pub(crate) fn same_but_evidence(
    id: &CheckpointId,
    sealed: &ActionPreview,
    fresh: &ActionPreview,
) -> Result<(), ComputerUseError> {
    match (&sealed.envelope.target, &fresh.envelope.target) {
        (None, None) => {}
        (was, Some(now)) => same_as_sealed_target(id, &sealed.envelope.tool, was.as_ref(), now)?,
        (Some(_), None) => {
            return Err(ComputerUseError::checkpoint(
                id,
                CheckpointRefusal::TargetChanged {
                    field: "target",
                    was: "evidence".into(),
                    now: "none".into(),
                },
            ));
        }
    }
    super::refresh::compare_sealed(sealed, fresh, &["target", "argsDigest"])
}

#[cfg(test)]
mod tests {
    use super::same_target;
    use crate::chain::CheckpointRefusal;
    use crate::contracts::TargetEvidence;

    fn evidence(revision: &str) -> TargetEvidence {
        TargetEvidence {
            platform: "linux".into(),
            app_id: "com.example.Form".into(),
            pid: None,
            window_id: None,
            window_title_digest: None,
            display_id: None,
            role: None,
            label_digest: None,
            bounds: None,
            observation_id: "observation-1".into(),
            screenshot_hash: None,
            ui_tree_revision: Some(revision.into()),
            confidence: 1.0,
            captured_at: "2026-12-06T00:00:00Z".into(),
        }
    }

    /// What the elements hold binds a press, and only a press: a typed
    /// value refuses a late approval of a press, not of a write; a changed
    /// structure refuses both.
    #[test]
    fn a_changed_value_refuses_a_press_and_not_a_write() {
        let approved = evidence("x11-tree-1-aa+atspi-bb+values-cc");
        let typed = evidence("x11-tree-1-aa+atspi-bb+values-dd");
        let moved = evidence("x11-tree-1-aa+atspi-ee+values-cc");
        assert!(same_target("set_value", &approved, &typed).is_ok());
        assert!(same_target("type", &approved, &typed).is_ok());
        for press in ["press_button", "click_element"] {
            assert!(matches!(
                same_target(press, &approved, &typed),
                Err(CheckpointRefusal::TargetChanged {
                    field: "uiTreeRevision",
                    ..
                })
            ));
        }
        for tool in ["set_value", "press_button"] {
            assert!(same_target(tool, &approved, &moved).is_err(), "{tool}");
        }
    }
}
