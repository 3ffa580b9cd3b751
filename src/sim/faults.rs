//! Faults the simulator can be started with, and its other settings.

use std::collections::BTreeSet;
use std::str::FromStr;

use crate::ComputerUseError;

/// One way the simulator can misbehave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fault {
    /// Leases name another session.
    LeaseSession,
    /// Leases name another principal.
    LeasePrincipal,
    /// Leases name another agent.
    LeaseAgent,
    /// Leases are scoped to another application.
    LeaseApp,
    /// Leases are scoped to another window.
    LeaseWindow,
    /// Leases come back already expired.
    LeaseExpired,
    /// Reservations name another session.
    ReservationSession,
    /// Reservations name another principal.
    ReservationPrincipal,
    /// Reservations name another agent.
    ReservationAgent,
    /// Reservations name another intent.
    ReservationIntent,
    /// Reservations cover another application.
    ReservationApp,
    /// Reservations cover another window.
    ReservationWindow,
    /// Receipts carry another digest.
    ReceiptDigest,
    /// Receipts name another session.
    ReceiptSession,
    /// The process exits before the effect.
    CrashBeforeEffect,
    /// The process exits after the effect was committed.
    CrashAfterCommit,
    /// Releasing a reservation fails.
    FailRelease,
    /// A release is answered with the reservation still active.
    ReleaseState,
}

impl Fault {
    /// Every fault, with its command-line name.
    pub const ALL: [(&'static str, Fault); 18] = [
        ("lease.sessionId", Self::LeaseSession),
        ("lease.principalId", Self::LeasePrincipal),
        ("lease.agentId", Self::LeaseAgent),
        ("lease.appIds", Self::LeaseApp),
        ("lease.windowIds", Self::LeaseWindow),
        ("lease.expiresAt", Self::LeaseExpired),
        ("reservation.sessionId", Self::ReservationSession),
        ("reservation.principalId", Self::ReservationPrincipal),
        ("reservation.agentId", Self::ReservationAgent),
        ("reservation.intentId", Self::ReservationIntent),
        ("reservation.appId", Self::ReservationApp),
        ("reservation.windowId", Self::ReservationWindow),
        ("receipt.actionDigest", Self::ReceiptDigest),
        ("receipt.sessionId", Self::ReceiptSession),
        ("crash.beforeEffect", Self::CrashBeforeEffect),
        ("crash.afterCommit", Self::CrashAfterCommit),
        ("release.fails", Self::FailRelease),
        ("release.state", Self::ReleaseState),
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("unknown", |(name, _)| name)
    }
}

impl FromStr for Fault {
    type Err = ComputerUseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .find(|(name, _)| *name == text)
            .map(|(_, f)| *f)
            .ok_or_else(|| ComputerUseError::InvalidRequest {
                field: "--fault".into(),
                message: format!(
                    "expected one of {}, got {text:?}",
                    Self::ALL
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
    }
}

/// How the simulator is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimConfig {
    /// The principal the server authenticates every caller as.
    pub principal_id: String,
    /// Injected faults.
    pub faults: BTreeSet<Fault>,
    /// Tools whose actions always need approval.
    pub confirm_tools: BTreeSet<String>,
    /// Allow destructive actions (denied by default).
    pub allow_destructive: bool,
    /// Delay every call by this many milliseconds.
    pub slow_ms: u64,
    /// Answer `sim_stats`, the simulator's own counters (not part of the
    /// protocol; never listed). Off, the tool is "not found", as on
    /// upstream's server.
    pub stats: bool,
    /// Apps whose windows hold credentials: any action on them needs a
    /// person's approval (`confirm_app:<app>`). Upstream's default list.
    pub credential_apps: BTreeSet<String>,
    /// Tools the policy denies outright (`disabled_tool:<tool>`); upstream
    /// disables `scrape` by default.
    pub disabled_tools: BTreeSet<String>,
}

/// Upstream's default credential apps (its list for hosts other than
/// Windows).
pub const DEFAULT_CREDENTIAL_APPS: [&str; 4] = [
    "com.apple.keychainaccess",
    "com.apple.Passwords",
    "com.1password.1password",
    "com.agilebits.onepassword7",
];

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            principal_id: "principal-local".into(),
            faults: BTreeSet::new(),
            confirm_tools: BTreeSet::new(),
            allow_destructive: false,
            slow_ms: 0,
            stats: false,
            credential_apps: DEFAULT_CREDENTIAL_APPS.map(String::from).into(),
            disabled_tools: ["scrape".to_owned()].into(),
        }
    }
}

impl SimConfig {
    /// A simulator that authenticates every caller as `principal_id`, with
    /// no faults and the default policy.
    pub fn for_principal(principal_id: impl Into<String>) -> Self {
        Self {
            principal_id: principal_id.into(),
            ..Self::default()
        }
    }

    /// Whether `fault` is injected.
    pub fn has(&self, fault: Fault) -> bool {
        self.faults.contains(&fault)
    }

    /// The same, answering `sim_stats` too (for tests that read the
    /// simulator's counters).
    pub fn with_stats(mut self) -> Self {
        self.stats = true;
        self
    }

    /// Reads command-line arguments: `--principal ID`, `--fault NAME`
    /// (repeatable), `--confirm-tool TOOL` (repeatable), `--allow-destructive`,
    /// `--slow-ms N`, `--stats`, `--credential-app APP` (repeatable; the
    /// first replaces upstream's default list). `COMPUTER_USE_PRINCIPAL_ID`
    /// sets the default principal.
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Self, ComputerUseError> {
        let mut config = Self::default();
        if let Ok(principal) = std::env::var("COMPUTER_USE_PRINCIPAL_ID")
            && !principal.is_empty()
        {
            config.principal_id = principal;
        }
        let mut args = args.into_iter();
        let mut named_credential_apps = false;
        let value = |flag: &str, next: Option<String>| {
            next.ok_or_else(|| ComputerUseError::InvalidRequest {
                field: flag.to_owned(),
                message: "expected a value after the flag".into(),
            })
        };
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--principal" => config.principal_id = value("--principal", args.next())?,
                "--fault" => {
                    config
                        .faults
                        .insert(value("--fault", args.next())?.parse()?);
                }
                "--confirm-tool" => {
                    config
                        .confirm_tools
                        .insert(value("--confirm-tool", args.next())?);
                }
                "--allow-destructive" => config.allow_destructive = true,
                "--stats" => config.stats = true,
                "--credential-app" => {
                    let app = value("--credential-app", args.next())?;
                    if !named_credential_apps {
                        config.credential_apps.clear();
                        named_credential_apps = true;
                    }
                    config.credential_apps.insert(app);
                }
                "--slow-ms" => {
                    let text = value("--slow-ms", args.next())?;
                    config.slow_ms =
                        text.parse().map_err(|_| ComputerUseError::InvalidRequest {
                            field: "--slow-ms".into(),
                            message: format!("expected milliseconds, got {text:?}"),
                        })?;
                }
                other => {
                    return Err(ComputerUseError::InvalidRequest {
                        field: other.to_owned(),
                        message: "unknown flag".into(),
                    });
                }
            }
        }
        Ok(config)
    }
}
