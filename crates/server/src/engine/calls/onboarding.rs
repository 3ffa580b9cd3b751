//! The handlers of the `onboarding` part of the server (its data and rules
//! are in `engine::onboarding`): each answers a tool call by changing the
//! [`State`].

use super::super::Refusal;
use super::super::onboarding::*;
use super::super::state::{Answer, State};
use super::super::wire::{now, stamp, text, uuid};
use serde_json::{Map, Value, json};

fn missing(what: &str) -> Refusal {
    Refusal::plain(format!("{what} is required"))
}

/// The environment a configured profile asks the host to restart with.
fn configuration(profile: &Value) -> Value {
    let list = |key: &str| -> Vec<String> {
        profile[key]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut environment = Map::new();
    environment.insert("COMPUTER_USE_V8".into(), json!("true"));
    environment.insert("COMPUTER_USE_ACTIVE_PROFILE".into(), json!("v8-safe"));
    environment.insert(
        "COMPUTER_USE_V8_ALLOW_SCRAPE".into(),
        json!(profile["allowScrape"] == json!(true))
            .to_string()
            .into(),
    );
    environment.insert(
        "COMPUTER_USE_AUDIT_LOG".into(),
        json!(if profile["persistAudit"] == json!(true) {
            "true"
        } else {
            "false"
        }),
    );
    for (key, name) in [
        ("filesystemRoots", "COMPUTER_USE_FS_ROOTS"),
        ("allowedAppIds", "COMPUTER_USE_ALLOWED_APPS"),
    ] {
        let items = list(key);
        if !items.is_empty() {
            environment.insert(name.into(), json!(items.join(",")));
        }
    }
    if let Some(chord) = profile["emergencyStopChord"]
        .as_str()
        .filter(|c| !c.is_empty())
    {
        environment.insert("COMPUTER_USE_EMERGENCY_STOP_CHORD".into(), json!(chord));
    }
    json!({ "restartRequired": true, "environment": environment })
}

impl State {
    /// `onboarding`, its semantic test reading the window's tree here
    /// (the in-process state, which no other session waits on).
    pub(in crate::engine) fn onboarding(&mut self, args: &Value) -> Result<Answer, Refusal> {
        let semantic = (text(args, "action") == Some("test_semantic"))
            .then(|| self.desk().tree_readable(args))
            .flatten();
        self.onboarding_read(args, semantic)
    }

    /// `onboarding`, with whether the window's tree could be read
    /// (`semantic`, read on the desktop with this state free; `None` when
    /// no window was named).
    pub(in crate::engine) fn onboarding_read(
        &mut self,
        args: &Value,
        semantic: Option<bool>,
    ) -> Result<Answer, Refusal> {
        let action = text(args, "action").unwrap_or_default();
        let principal = self.principal();
        let at = stamp(now());
        if action == "start" {
            let run = json!({
                "onboardingId": uuid(), "principalId": principal, "stage": "created",
                "revision": 1, "createdAt": at, "updatedAt": at, "checks": {},
            });
            let id = run["onboardingId"].as_str().unwrap_or_default().to_owned();
            self.onboarding.runs.insert(id, run.clone());
            return Ok(Answer::of(json!({ "onboarding": run })));
        }
        let id = text(args, "onboarding_id").ok_or_else(|| missing("onboarding_id"))?;
        let run = self
            .onboarding
            .runs
            .get(id)
            .cloned()
            .ok_or_else(|| Refusal::plain("onboarding session not found"))?;
        if run["principalId"] != json!(principal) {
            return Err(Refusal::plain(
                "onboarding session belongs to another principal",
            ));
        }
        let mut checks = run["checks"].clone();
        let mut profile = None;
        let mut completed = false;
        let coordinate = || {
            args.get("coordinate")
                .filter(|c| c.as_array().is_some_and(|a| a.len() == 2))
                .ok_or_else(|| missing("coordinate"))
        };
        match action {
            "status" => {}
            "diagnose" => {
                checks["doctor"] = json!({ "passed": true, "failedChecks": 0, "warningChecks": 0 });
                checks["permissions"] = json!({ "inspected": true, "entries": [{
                    "id": "display_capture", "label": "Simulated display", "required": true,
                    "canRequestInProcess": false,
                    "remediation": "Nothing to grant: the simulated desktop captures without permission.",
                    "status": "unknown",
                }] });
            }
            "test_capture" => {
                checks["capture"] =
                    json!({ "tested": true, "passed": true, "mimeType": "image/png" });
            }
            "show_pointer" => {
                coordinate()?;
                checks["pointer"] = json!({
                    "shown": true, "tested": false, "passed": false, "confirmedByUser": false,
                });
            }
            "confirm_pointer" | "test_pointer" => {
                if action == "test_pointer" {
                    coordinate()?;
                }
                let confirmed = args.get("confirmed_by_user").and_then(Value::as_bool);
                let confirmed = match (action, confirmed) {
                    ("confirm_pointer", None) => return Err(missing("confirmed_by_user")),
                    (_, confirmed) => confirmed.unwrap_or(false),
                };
                if action == "confirm_pointer"
                    && checks.pointer("/pointer/shown") != Some(&json!(true))
                {
                    return Err(Refusal::plain(
                        "show the virtual pointer before confirming it",
                    ));
                }
                checks["pointer"] = json!({
                    "shown": true, "tested": true, "passed": confirmed, "confirmedByUser": confirmed,
                });
            }
            "test_semantic" => {
                let window = args
                    .get("window_id")
                    .and_then(Value::as_i64)
                    .ok_or_else(|| missing("window_id"))?;
                let passed = semantic.unwrap_or(false);
                checks["semantic"] =
                    json!({ "tested": true, "passed": passed, "windowId": window });
            }
            "acknowledge_emergency" => {
                let acknowledged = args
                    .get("acknowledged_by_user")
                    .and_then(Value::as_bool)
                    .ok_or_else(|| missing("acknowledged_by_user"))?;
                if acknowledged && checks.pointer("/emergency/presented") != Some(&json!(true)) {
                    return Err(Refusal::plain(
                        "present the emergency-stop capability before recording acknowledgment",
                    ));
                }
                checks["emergency"] = json!({
                    "chord": chord(), "backend": "cooperative_runtime_only",
                    "physicalChordSupported": false, "physicalOnly": false,
                    "presented": true, "acknowledgedByUser": acknowledged,
                });
            }
            "configure" => profile = Some(Self::configure(args, &checks)?),
            "complete" => {
                let done = |pointer: &str| checks.pointer(pointer) == Some(&json!(true));
                if checks.get("doctor").is_none()
                    || !done("/capture/tested")
                    || !done("/pointer/tested")
                    || !done("/semantic/tested")
                    || !done("/emergency/acknowledgedByUser")
                    || run.get("profile").is_none()
                {
                    return Err(Refusal::plain(
                        "diagnostics, capture, pointer, semantic test, emergency-stop acknowledgment, and policy configuration are required",
                    ));
                }
                if !done("/capture/passed") {
                    return Err(Refusal::plain(
                        "screen capture must pass before onboarding completes",
                    ));
                }
                let mut finished = run["profile"].clone();
                finished["completedAt"] = json!(at);
                profile = Some(finished);
                completed = true;
            }
            other => {
                return Err(Refusal::plain(format!(
                    "unsupported onboarding action: {other}"
                )));
            }
        }
        let mut next = run.clone();
        if action != "status" {
            next["checks"] = checks;
            if let Some(profile) = profile {
                next["profile"] = profile;
            }
            next["revision"] = json!(run["revision"].as_u64().unwrap_or(0) + 1);
            next["updatedAt"] = json!(at);
            next["stage"] = json!(if completed { "completed" } else { stage(&next) });
            if run["stage"] == "completed" {
                next["stage"] = json!("completed");
            }
            self.onboarding.runs.insert(id.to_owned(), next.clone());
        }
        let mut answer = json!({ "onboarding": next });
        if let Some(profile) = next.get("profile") {
            answer["configuration"] = configuration(profile);
        }
        Ok(Answer::of(answer))
    }

    /// The safe policy profile, once the emergency stop was acknowledged.
    fn configure(args: &Value, checks: &Value) -> Result<Value, Refusal> {
        if checks.pointer("/emergency/acknowledgedByUser") != Some(&json!(true)) {
            return Err(Refusal::plain(
                "emergency-stop acknowledgment is required before policy configuration",
            ));
        }
        let list = |key: &str| -> Vec<String> {
            args.get(key)
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let roots = list("filesystem_roots");
        let apps = list("allowed_app_ids");
        for root in &roots {
            if !std::path::Path::new(root).is_absolute() {
                return Err(Refusal::plain("filesystem roots must be absolute"));
            }
            if root.contains(',') {
                return Err(Refusal::plain(
                    "filesystem roots cannot contain commas in the environment profile",
                ));
            }
        }
        if apps.iter().any(|app| app.contains(',')) {
            return Err(Refusal::plain(
                "allowed app IDs cannot contain commas in the environment profile",
            ));
        }
        let passed = |pointer: &str| checks.pointer(pointer) == Some(&json!(true));
        Ok(json!({
            "filesystemRoots": roots,
            "allowedAppIds": apps,
            "allowScrape": args.get("allow_scrape") == Some(&json!(true)),
            "persistAudit": args.get("persist_audit") == Some(&json!(true)),
            "captureSupported": passed("/capture/passed"),
            "semanticSupported": passed("/semantic/passed"),
            "virtualPointerSupported": passed("/pointer/passed"),
            "emergencyStopChord": checks.pointer("/emergency/chord").cloned().unwrap_or(json!("")),
            "physicalEmergencyStopSupported": passed("/emergency/physicalChordSupported"),
            "platform": platform(),
        }))
    }
}
