//! Previews: an action request bound into an envelope and judged, as
//! upstream's coordinator does it. `preview_action` answers the preview;
//! `execute_action` previews again, internally, before it runs anything.

use adk_computer_use::contracts::catalogue::protocol::name as protocol;
use adk_computer_use::contracts::catalogue::tool;
use adk_computer_use::journal::events;
use serde_json::{Map, Value, json};

use super::Refusal;
use super::actuate::Read;
use super::grants::Pending;
use super::policy::{self, Classification, ToolMeta};
use super::request::sensitivity_summary;
pub(super) use super::request::{ActionRequest, postcondition_summary};
use super::state::{Answer, State};
use super::wire::{after, now, object, stamp, text, uuid};
use adk_computer_use::digest::{canonical_json, sha256_hex};

/// A preview's outcome: the answer, and what execution needs of it.
pub(super) struct Preview {
    pub answer: Value,
    pub meta: ToolMeta,
    pub scope_digest: Option<String>,
}

impl Preview {
    pub(super) fn envelope(&self) -> &Value {
        &self.answer["envelope"]
    }

    pub(super) fn decision(&self) -> &str {
        self.answer
            .pointer("/policy/decision")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    pub(super) fn blocker(&self) -> Option<&str> {
        self.answer.get("blocker").and_then(Value::as_str)
    }

    pub(super) fn policy_digest(&self) -> &str {
        self.answer
            .pointer("/policy/policyDigest")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

fn denied_binding() -> Refusal {
    Refusal::new(
        "policy_denied",
        "postcondition must be bound to the action target or resource",
    )
}

impl State {
    pub(super) fn preview_tool(
        &mut self,
        args: &Value,
        read: Option<Read>,
    ) -> Result<Answer, Refusal> {
        let request = ActionRequest::parse(args);
        if let Some(refusal) = policy::outside_catalogue(&request.tool, protocol::PREVIEW_ACTION) {
            return Err(refusal);
        }
        Ok(Answer::of(self.preview(&request, read)?.answer))
    }

    /// Checks the resource a caller named: an absolute path, and for a
    /// file tool the one its arguments name.
    fn check_named_resource(request: &ActionRequest) -> Result<(), Refusal> {
        let Some(named) = request.named_path.as_deref() else {
            return Ok(());
        };
        if !std::path::Path::new(named).is_absolute() || named.split('/').any(|part| part == "..") {
            return Err(Refusal::new(
                "policy_denied",
                format!(
                    "resource.filesystem_path must be an absolute path without '..', got {named:?}"
                ),
            ));
        }
        if request.is_file_tool() && request.file_path() != Some(named) {
            return Err(Refusal::new(
                "policy_denied",
                format!(
                    "resource.filesystem_path {named:?} is not the path the {} arguments name",
                    request.tool
                ),
            ));
        }
        Ok(())
    }

    /// Checks the postcondition and that it is bound to the action.
    fn check_postcondition(&self, request: &ActionRequest) -> Result<(), Refusal> {
        let Some(expected) = &request.postcondition else {
            return Ok(());
        };
        let kind = expected.get("kind").and_then(Value::as_str).unwrap_or("");
        let exists = expected.get("exists") == Some(&json!(true));
        for (key, what) in [
            ("valueDigest", "valueDigest"),
            ("contentDigest", "contentDigest"),
        ] {
            if !exists && kind != "process" && kind != "window" && expected.get(key).is_some() {
                return Err(Refusal::plain(format!(
                    "absent {kind} postcondition cannot include {what}"
                )));
            }
        }
        let target_window = request.target.as_ref().and_then(|t| t.get("windowId"));
        match kind {
            "ui_element" if target_window.is_some_and(Value::is_number) => Ok(()),
            "window" if target_window == expected.get("windowId") => Ok(()),
            // A file tool's own path, or the file an input action named as
            // its resource (what `cat > FILE` in a terminal writes).
            "filesystem"
                if request
                    .file_path()
                    .is_some_and(|path| expected.get("path") == Some(&json!(path))) =>
            {
                Ok(())
            }
            _ => Err(denied_binding()),
        }
    }

    /// Binds the request into an envelope, judges it, records the events
    /// and any pending approval.
    /// The desktop's part (the sensitivity of the fields a semantic edit
    /// writes) is `read` when the server read it with its state free, and
    /// read here otherwise.
    pub(super) fn preview(
        &mut self,
        request: &ActionRequest,
        read: Option<Read>,
    ) -> Result<Preview, Refusal> {
        let session = self.session_of(&request.session_id)?;
        if !session.can_execute() {
            return Err(Refusal::with_details(
                "session_not_running",
                format!("session cannot execute while {}", session.state),
                json!({ "sessionId": request.session_id, "state": session.state }),
            ));
        }
        Self::check_named_resource(request)?;
        self.check_postcondition(request)?;
        let meta = policy::known_tool(&request.tool)
            .ok_or_else(|| Refusal::plain(format!("unknown tool: {}", request.tool)))?;
        if request.postcondition.is_some() && !meta.mutates {
            return Err(Refusal::new(
                "policy_denied",
                "postconditions are only valid for mutating actions",
            ));
        }
        let sensitivity = match read {
            Some(read) => read.sensitivity,
            None => self.desk().sensitivity(request),
        };
        let assessment = sensitivity
            .as_ref()
            .and_then(|s| s.get("assessment"))
            .and_then(Value::as_str);
        let mut class = policy::classify(&request.tool, &request.args, meta);
        // Upstream's rule: a write whose sensitivity is not known is a
        // secret's access. A tree that was only too large to read, a bus
        // that did not answer, or a field the window does not hold says
        // nothing of secrets: the action is blocked
        // (`sensitivity_unavailable`, the signal naming why) under its own
        // class. An ambiguous match stays a secret's: one of the fields it
        // matched may be one.
        let not_about_secrets = sensitivity
            .as_ref()
            .and_then(|s| s.get("signals"))
            .and_then(Value::as_array)
            .is_some_and(|signals| {
                signals.iter().any(|s| {
                    matches!(
                        s.as_str(),
                        Some(
                            "tree_too_large"
                                | "accessibility_unavailable"
                                | "accessibility_timeout"
                                | "element_not_found"
                        )
                    )
                })
            });
        if assessment.is_some_and(|a| a != "non_sensitive") && !not_about_secrets {
            class = Classification {
                class: "secret_access",
                reversible: false,
                external: true,
            };
        }
        let at = now();
        let action_id = request.action_id.clone().unwrap_or_else(uuid);
        let operation = request.operation();
        let resource = request.resource();
        let mut labels = request
            .data_labels
            .clone()
            .unwrap_or_else(|| vec![json!("unknown")]);
        if assessment == Some("sensitive") && !labels.contains(&json!("credential")) {
            labels.push(json!("credential"));
        }
        let digest = sha256_hex(canonical_json(&object([
            ("tool", Some(json!(request.tool))),
            ("operation", Some(json!(operation))),
            ("args", Some(request.args.clone())),
            ("mode", Some(json!(request.mode))),
            ("target", request.target.clone()),
            ("resource", Some(resource.clone())),
            ("dataLabels", Some(json!(labels))),
            ("provenance", request.provenance.clone()),
            ("postcondition", request.postcondition.clone()),
            (
                "targetSensitivity",
                sensitivity.clone().map(|mut s| {
                    if let Value::Object(map) = &mut s {
                        map.remove("observedAt");
                    }
                    s
                }),
            ),
        ])));
        let has_resource = resource.as_object().is_some_and(|r| !r.is_empty());
        let envelope = object([
            ("actionId", Some(json!(action_id))),
            ("sessionId", Some(json!(request.session_id))),
            (
                "executionGroupId",
                request
                    .execution_group_id
                    .clone()
                    .filter(|g| !g.is_empty())
                    .map(Value::from),
            ),
            ("principalId", Some(json!(self.principal()))),
            (
                "agentId",
                request
                    .agent_id
                    .clone()
                    .filter(|a| !a.is_empty())
                    .map(Value::from),
            ),
            ("tool", Some(json!(request.tool))),
            ("operation", Some(json!(operation))),
            ("actionClass", Some(json!(class.class))),
            ("requestedMode", Some(json!(request.mode))),
            ("target", request.target.clone()),
            ("targetSensitivity", sensitivity.clone()),
            ("resource", has_resource.then_some(resource)),
            ("provenance", request.provenance.clone()),
            ("dataLabels", Some(json!(labels))),
            ("postcondition", request.postcondition.clone()),
            ("reversible", Some(json!(class.reversible))),
            ("externalSideEffect", Some(json!(class.external))),
            ("proposedAt", Some(json!(stamp(at)))),
            (
                "expiresAt",
                Some(json!(stamp(after(
                    at,
                    request.expires_in_ms.unwrap_or(30_000).max(0) as u64
                )))),
            ),
            ("argsDigest", Some(json!(digest))),
        ]);
        let scope_digest = self.session_scope_digest(request, &envelope);
        let app = request
            .target
            .as_ref()
            .and_then(|t| t.get("appId"))
            .and_then(Value::as_str)
            .or_else(|| text(&request.args, "target_app"))
            .unwrap_or("*");
        let capability = policy::capability(
            &request.tool,
            meta,
            app,
            self.desktop.acts_unfocused(&request.tool),
        );
        let decision = policy::decide(&self.config, &envelope);
        let policy_digest = policy::policy_digest(&self.config);
        let supports = capability["supportedModes"]
            .as_array()
            .is_some_and(|modes| modes.contains(&json!(request.mode)));
        let blocker = if request.mode == "shadow" && meta.mutates {
            Some("shadow_mutation")
        } else if !supports {
            Some("foreground_required")
        } else if decision.decision == "deny" {
            Some("policy_denied")
        } else if request.needs_target(meta) && request.target.is_none() {
            Some("target_evidence_required")
        } else if assessment == Some("unknown") {
            Some("sensitivity_unavailable")
        } else if decision.decision == "confirm" {
            let grant = request.approval_grant_id.as_deref();
            let valid = grant.is_some_and(|id| {
                self.grants
                    .validate(id, &envelope, &policy_digest, scope_digest.as_deref(), at)
                    .is_ok()
            });
            (!valid).then_some("approval_required")
        } else {
            None
        };
        let policy = json!({
            "decision": decision.decision,
            "policyDigest": policy_digest,
            "reasons": decision.reasons,
        });
        let answer = object([
            ("envelope", Some(envelope.clone())),
            ("capability", Some(capability.clone())),
            ("policy", Some(policy)),
            ("executable", Some(json!(blocker.is_none()))),
            ("blocker", blocker.map(Value::from)),
        ]);
        if blocker == Some("approval_required") {
            self.pending.insert(
                (request.session_id.clone(), action_id.clone()),
                Pending {
                    preview: answer.clone(),
                    scope_digest: scope_digest.clone(),
                },
            );
        }
        let mut payload = Map::new();
        for (key, value) in [
            ("tool", json!(request.tool)),
            ("operation", json!(operation)),
            ("mode", json!(request.mode)),
            ("actionClass", json!(class.class)),
            ("interference", capability["interference"].clone()),
            ("policyDecision", json!(decision.decision)),
            ("executable", json!(blocker.is_none())),
            ("verificationRequired", json!(request.needs_verification())),
        ] {
            payload.insert(key.into(), value);
        }
        let extras = |payload: &mut Map<String, Value>| {
            if let Some(sensitivity) = &sensitivity {
                payload.extend(sensitivity_summary(sensitivity));
            }
            if let Some(postcondition) = &request.postcondition {
                payload.extend(postcondition_summary(postcondition));
            }
        };
        extras(&mut payload);
        if let Some(blocker) = blocker {
            payload.insert("blocker".into(), json!(blocker));
        }
        let session_id = request.session_id.clone();
        self.publish(
            &session_id,
            Some(&action_id),
            events::PREVIEWED,
            Value::Object(payload),
        );
        if blocker == Some("approval_required") {
            let target = |key: &str| {
                envelope
                    .pointer(&format!("/target/{key}"))
                    .cloned()
                    .unwrap_or(Value::Null)
            };
            let mut payload = Map::new();
            for (key, value) in [
                ("actionDigest", envelope["argsDigest"].clone()),
                ("tool", json!(request.tool)),
                ("operation", json!(operation)),
                ("actionClass", json!(class.class)),
                ("mode", json!(request.mode)),
                ("expiresAt", envelope["expiresAt"].clone()),
                ("targetAppId", target("appId")),
                ("targetWindowId", target("windowId")),
                ("reasons", json!(decision.reasons)),
                ("sessionScopeEligible", json!(scope_digest.is_some())),
            ] {
                payload.insert(key.into(), value);
            }
            extras(&mut payload);
            self.publish(
                &session_id,
                Some(&action_id),
                events::APPROVAL_REQUIRED,
                Value::Object(payload),
            );
        }
        Ok(Preview {
            answer,
            meta,
            scope_digest,
        })
    }

    /// The scope a session-operation grant may bind: repeated reversible
    /// edits of the same proven, non-sensitive controls, and nothing else.
    fn session_scope_digest(&self, request: &ActionRequest, envelope: &Value) -> Option<String> {
        if !matches!(request.tool.as_str(), tool::SET_VALUE | tool::FILL_FORM) {
            return None;
        }
        let text_at = |pointer: &str| envelope.pointer(pointer).and_then(Value::as_str);
        let flag = |pointer: &str| envelope.pointer(pointer).and_then(Value::as_bool);
        if text_at("/actionClass") != Some("edit_reversible")
            || flag("/reversible") != Some(true)
            || text_at("/targetSensitivity/assessment") != Some("non_sensitive")
            || text_at("/target/appId").is_none()
            || envelope.pointer("/target/windowId").is_none()
            || flag("/provenance/untrustedInstruction") == Some(true)
            || flag("/provenance/crossesDataBoundary") == Some(true)
        {
            return None;
        }
        let labels = envelope["dataLabels"].as_array()?;
        if labels.is_empty() || labels.iter().any(|l| l != "public" && l != "private") {
            return None;
        }
        let selector = |value: &Value| -> Option<Value> {
            Some(
                json!({ "role": value.get("role")?.as_str()?, "label": value.get("label")?.as_str()? }),
            )
        };
        let selectors: Vec<Value> = if request.tool == tool::SET_VALUE {
            vec![selector(&request.args)?]
        } else {
            let fields = request.args.get("fields")?.as_array()?;
            if fields.is_empty() || fields.len() > 100 {
                return None;
            }
            fields.iter().map(selector).collect::<Option<_>>()?
        };
        if envelope.pointer("/targetSensitivity/fieldsChecked") != Some(&json!(selectors.len())) {
            return None;
        }
        let mut labels: Vec<String> = labels
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        labels.sort();
        let scope = json!({
            "version": 1,
            "sessionId": envelope["sessionId"],
            "executionGroupId": envelope.get("executionGroupId"),
            "agentId": envelope.get("agentId"),
            "tool": envelope["tool"],
            "operation": envelope["operation"],
            "actionClass": envelope["actionClass"],
            "mode": envelope["requestedMode"],
            "target": {
                "appId": envelope.pointer("/target/appId"),
                "windowId": envelope.pointer("/target/windowId"),
                "pid": envelope.pointer("/target/pid"),
                "displayId": envelope.pointer("/target/displayId"),
            },
            "selectors": selectors,
            "dataLabels": labels,
            "postconditionKind": envelope.pointer("/postcondition/kind"),
        });
        Some(sha256_hex(canonical_json(&scope)))
    }
}
