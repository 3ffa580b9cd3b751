#![allow(dead_code)] // each example uses a different part of this runtime
//! An in-process desktop runtime for the examples: a clipboard, a policy, and
//! idempotent receipts. No server, no network, no operating-system calls.
//!
//! It is a starting point for writing your own `ComputerUseRuntime`: every
//! answer it gives is shaped like a real `computer-use-mcp` answer, and the
//! chain checks it exactly as it would check a live server's.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use adk_computer_use::ComputerUseError;
use adk_computer_use::clock::format_rfc3339;
use adk_computer_use::contracts::*;
use adk_computer_use::runtime::*;
use adk_computer_use_testkit::answers;
use serde_json::json;
use time::{Duration, OffsetDateTime};

pub const PRINCIPAL: &str = "principal-demo";
/// The runtime session the in-process desktop acts in.
pub const SESSION: &str = "session-demo";
pub const APP: &str = "org.example.Clipboard";

/// Target evidence for the clipboard window, as an observation would give it.
pub fn clipboard_target(observation_id: &str) -> TargetEvidence {
    TargetEvidence {
        platform: std::env::consts::OS.into(),
        app_id: APP.into(),
        pid: None,
        window_id: Some(WindowId::Number(1)),
        window_title_digest: None,
        display_id: None,
        role: None,
        label_digest: None,
        bounds: None,
        observation_id: observation_id.into(),
        screenshot_hash: None,
        ui_tree_revision: None,
        confidence: 1.0,
        captured_at: format_rfc3339(now()).unwrap_or_default(),
    }
}

#[derive(Default, serde::Serialize, serde::Deserialize)]
struct State {
    clipboard: String,
    receipts: BTreeMap<String, ExecutionReceipt>,
    previewed: BTreeMap<String, serde_json::Value>,
    reservations: BTreeSet<String>,
    next: u64,
}

/// A desktop whose only effect is the clipboard.
pub struct InProcessDesktop {
    /// Tools that need a person's approval.
    approval_tools: BTreeSet<String>,
    state: Mutex<State>,
    /// Where the runtime keeps its own durable state, if anywhere.
    state_file: Option<std::path::PathBuf>,
}

fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc()
}

fn stamp(at: OffsetDateTime) -> Result<String, ComputerUseError> {
    format_rfc3339(at)
}

impl InProcessDesktop {
    pub fn new(approval_tools: &[&str]) -> Self {
        Self {
            approval_tools: approval_tools.iter().map(|t| (*t).to_owned()).collect(),
            state: Mutex::new(State::default()),
            state_file: None,
        }
    }

    /// A desktop that keeps its state (previewed arguments, receipts, the
    /// clipboard) in `path`, so a second process sees what the first did.
    pub fn persistent(
        approval_tools: &[&str],
        path: std::path::PathBuf,
    ) -> Result<Self, ComputerUseError> {
        let state = match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| ComputerUseError::Decode {
                what: path.display().to_string(),
                message: e.to_string(),
            })?,
            Err(_) => State::default(),
        };
        let mut desktop = Self::new(approval_tools);
        desktop.state = Mutex::new(state);
        desktop.state_file = Some(path);
        Ok(desktop)
    }

    fn save(&self) -> Result<(), ComputerUseError> {
        let Some(path) = &self.state_file else {
            return Ok(());
        };
        let text = serde_json::to_string(&*self.state()).map_err(|e| ComputerUseError::Decode {
            what: "desktop state".into(),
            message: e.to_string(),
        })?;
        std::fs::write(path, text).map_err(|e| ComputerUseError::Transport {
            operation: "save desktop state".into(),
            message: e.to_string(),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn clipboard(&self) -> String {
        self.state().clipboard.clone()
    }

    fn next_id(&self, prefix: &str) -> String {
        let mut state = self.state();
        state.next += 1;
        format!("{prefix}-{:04}", state.next)
    }
}

impl ComputerUseRuntime for InProcessDesktop {
    fn session_context(&self) -> Option<SessionContext> {
        Some(SessionContext {
            session_id: SESSION.into(),
            principal_id: PRINCIPAL.into(),
            execution_group_id: None,
        })
    }

    async fn discover_capabilities(
        &self,
        _: &ObservationScope,
    ) -> Result<Vec<ExecutionCapability>, ComputerUseError> {
        Ok(vec![ExecutionCapability {
            app_id: APP.into(),
            operation: "write_clipboard".into(),
            backend: ExecutionBackend::Scripting,
            supported_modes: vec![ExecutionMode::Shadow, ExecutionMode::Background],
            interference: Interference::None,
            confidence: 1.0,
            verified_at: None,
            verification_source: VerificationSource::PlatformRule,
            certification: None,
        }])
    }

    async fn observe_visual(&self, _: &ObservationScope) -> Result<Observation, ComputerUseError> {
        Ok(Observation {
            observation_id: Some(self.next_id("visual")),
            structured: json!({ "display": "main", "width": 1280, "height": 800 }),
            images: vec![],
            captured_at: None,
        })
    }

    async fn observe_semantic(
        &self,
        _: &ObservationScope,
    ) -> Result<Observation, ComputerUseError> {
        Ok(Observation {
            observation_id: Some(self.next_id("semantic")),
            structured: json!({ "windows": [{ "appId": APP, "windowId": 1, "title": "Clipboard" }] }),
            images: vec![],
            captured_at: None,
        })
    }

    async fn preview_action(
        &self,
        request: &ActionRequest<'_>,
    ) -> Result<PreviewAnswer, ComputerUseError> {
        let action = &request.action;
        // As a real server's policy: the host's confirm tools, and any
        // write of credential data.
        let needs_approval = self.approval_tools.contains(&action.tool)
            || action
                .data_labels
                .contains(&adk_computer_use::contracts::DataLabel::Credential);
        // Builders of a well-behaved answer: bound to the request, valid for
        // the time it asked (five minutes at most).
        let envelope = answers::envelope_for(request, PRINCIPAL, now(), Duration::minutes(5))?;
        // Like a real runtime, keep the previewed arguments: the envelope
        // carries only their digest.
        self.state()
            .previewed
            .insert(envelope.action_id.clone(), action.arguments.clone());
        self.save()?;
        let route = if needs_approval {
            answers::PreviewRoute::NeedsApproval
        } else {
            answers::PreviewRoute::Allowed
        };
        let mut preview = answers::preview_for(envelope, route, "demo-policy-v1");
        preview.policy.reasons = vec![
            if needs_approval {
                "the tool or its data needs a person's approval"
            } else {
                "public text to the clipboard"
            }
            .into(),
        ];
        Ok(PreviewAnswer::from(preview))
    }

    async fn reserve_target(
        &self,
        proof: &ReserveProof<'_>,
    ) -> Result<Option<TargetReservation>, ComputerUseError> {
        let envelope = proof.envelope();
        let id = self.next_id("reservation");
        self.state().reservations.insert(id.clone());
        Ok(Some(answers::reservation_for(
            envelope,
            id,
            APP,
            now(),
            Duration::seconds(30),
        )?))
    }

    async fn release_target(&self, proof: &ReleaseProof<'_>) -> Result<(), ComputerUseError> {
        self.state()
            .reservations
            .remove(&proof.reservation().reservation_id);
        Ok(())
    }

    async fn release_lease(&self, _: &LeaseReleaseProof<'_>) -> Result<(), ComputerUseError> {
        // Leases here are single-use and end with their action.
        Ok(())
    }

    async fn acquire_lease(
        &self,
        proof: &LeaseProof<'_>,
    ) -> Result<ControlLease, ComputerUseError> {
        let envelope = proof.envelope();
        answers::lease_for(
            envelope,
            self.next_id("lease"),
            &[],
            now(),
            Duration::seconds(30),
        )
    }

    async fn execute_action(
        &self,
        proof: &ExecuteProof<'_>,
    ) -> Result<ExecutionReceipt, ComputerUseError> {
        let envelope = proof.envelope();
        if let Some(replayed) = self.state().receipts.get(&envelope.action_id) {
            return Ok(replayed.clone());
        }
        let receipt = answers::receipt_for(
            envelope,
            self.next_id("receipt"),
            now(),
            Some(json!({ "structuredContent": { "written": true } })),
        )?;
        let mut state = self.state();
        let text = state
            .previewed
            .get(&envelope.action_id)
            .and_then(|a| a.get("text"))
            .and_then(|t| t.as_str());
        let Some(text) = text.map(str::to_owned) else {
            return Err(ComputerUseError::Refused {
                operation: "execute_action".into(),
                code: "action_id_conflict".into(),
                message: format!(
                    "action {} was never previewed with a text",
                    envelope.action_id
                ),
                details: None,
            });
        };
        state.clipboard = text;
        state
            .receipts
            .insert(envelope.action_id.clone(), receipt.clone());
        drop(state);
        self.save()?;
        Ok(receipt)
    }
}
