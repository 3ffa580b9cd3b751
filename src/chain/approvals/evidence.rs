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
    sealed: Option<&TargetEvidence>,
    fresh: &TargetEvidence,
) -> Result<(), ComputerUseError> {
    let refusal = match sealed {
        Some(sealed) => same_target(sealed, fresh).err(),
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

/// Refuses unless `fresh` shows the target `approved` names with nothing
/// but its pixels changed (see the module's documentation).
pub(crate) fn same_target(
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
    if approved.ui_tree_revision.is_some() && approved.ui_tree_revision != fresh.ui_tree_revision {
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
        (was, Some(now)) => same_as_sealed_target(id, was.as_ref(), now)?,
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
