//! How the server is started: whose desktop it is, and its policy.
//!
//! Nothing here makes the server lie. Faults belong to the simulated
//! desktop ([`crate::desktop::simulated::Faults`]); a real desktop's server
//! cannot be given one.

use adk_computer_use::contracts::catalogue::tool;
use std::collections::BTreeSet;

use adk_computer_use::ComputerUseError;

/// How the server is started (any desktop).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The principal the server authenticates every caller as.
    pub principal_id: String,
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
    /// How old target evidence may be when an action is executed, in
    /// milliseconds: upstream's `maxTargetAgeMs`, 30,000 by default.
    /// Evidence older than this is refused `stale_target`.
    pub max_target_age_ms: u64,
}

/// Upstream's limit on the age of target evidence at execution.
pub const DEFAULT_MAX_TARGET_AGE_MS: u64 = 30_000;

/// Upstream's default credential apps (its list for hosts other than
/// Windows).
pub const DEFAULT_CREDENTIAL_APPS: [&str; 4] = [
    "com.apple.keychainaccess",
    "com.apple.Passwords",
    "com.1password.1password",
    "com.agilebits.onepassword7",
];

impl Default for Config {
    fn default() -> Self {
        Self {
            principal_id: "principal-local".into(),
            confirm_tools: BTreeSet::new(),
            allow_destructive: false,
            slow_ms: 0,
            stats: false,
            credential_apps: DEFAULT_CREDENTIAL_APPS.map(String::from).into(),
            disabled_tools: [tool::SCRAPE.to_owned()].into(),
            max_target_age_ms: DEFAULT_MAX_TARGET_AGE_MS,
        }
    }
}

impl Config {
    /// A simulator that authenticates every caller as `principal_id`, with
    /// the default policy.
    pub fn for_principal(principal_id: impl Into<String>) -> Self {
        Self {
            principal_id: principal_id.into(),
            ..Self::default()
        }
    }

    /// The same, answering `sim_stats` too (for tests that read the
    /// simulator's counters).
    pub fn with_stats(mut self) -> Self {
        self.stats = true;
        self
    }

    /// Evidence older than `ms` milliseconds is refused at execution (a
    /// test that shows what happens to an approval given after the
    /// evidence aged sets it short rather than waiting 30 s).
    pub fn with_max_target_age_ms(mut self, ms: u64) -> Self {
        self.max_target_age_ms = ms;
        self
    }

    /// Reads command-line arguments: `--principal ID`, `--confirm-tool TOOL` (repeatable), `--allow-destructive`,
    /// `--slow-ms N`, `--max-target-age-ms N` (at least 1), `--stats`, `--credential-app APP` (repeatable; the
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
                "--max-target-age-ms" => {
                    let text = value("--max-target-age-ms", args.next())?;
                    config.max_target_age_ms =
                        text.parse().ok().filter(|ms| *ms > 0).ok_or_else(|| {
                            ComputerUseError::InvalidRequest {
                                field: "--max-target-age-ms".into(),
                                message: format!(
                                    "expected a positive number of milliseconds, got {text:?}"
                                ),
                            }
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
