#![allow(dead_code)] // live_form and adk_graph use different parts of it
//! The approval page as a deployment runs it, for the examples: the desktop
//! server as its own process (`computer-use-server --desktop x11`, or
//! `wayland`), a
//! checkpoint store the agent suspends to, and `computer-use-approvals
//! serve` over that store with the approver's key and credential. A person
//! decides on the page; with `--browser`, headless Chromium stands in for
//! the person and clicks Approve after checking what the card shows.

use std::sync::Arc;
use std::time::Duration;

use adk_computer_use::chain::{
    ApproverKey, ApproverPublicKey, CheckpointId, CheckpointStore, FileCheckpointStore, SealingKey,
    inspect,
};
use adk_computer_use::mcp::{ComputerUseMcpRuntime, McpRuntimeConfig};
use adk_computer_use_testkit::binary;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};

type Error = Box<dyn std::error::Error>;

/// How long a decision is waited for.
const DECISION_WAIT: Duration = Duration::from_secs(600);

/// The desktop server as its own process, listening on a local port, and
/// the credentials it printed; the process ends with this value.
pub struct Served {
    _server: Child,
    /// Where it listens (`127.0.0.1:PORT`).
    pub address: String,
    /// The agent's credential.
    pub agent: String,
    /// The approver's credential (the page's or the host's, never the
    /// agent's).
    pub approver: String,
}

/// Starts `computer-use-server --desktop DESKTOP` for `principal`, with
/// `extra` arguments (`--confirm-tool write_clipboard`, say).
pub async fn serve(principal: &str, desktop: &str, extra: &[&str]) -> Result<Served, Error> {
    let mut server = Command::new(binary::path(binary::SERVER))
        .args([
            "--desktop",
            desktop,
            "--principal",
            principal,
            "--listen",
            "127.0.0.1:0",
        ])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("computer-use-server could not be started (build it first: cargo build --workspace --all-features --bins): {e}"))?;
    let mut out = BufReader::new(server.stdout.take().ok_or("the server has no stdout")?).lines();
    let address = line(&mut out, "listening on ").await?;
    let agent = line(&mut out, "agent-credential ").await?;
    let approver = line(&mut out, "approver-credential ").await?;
    Ok(Served {
        _server: server,
        address,
        agent,
        approver,
    })
}

/// The page and what it runs on; its processes end with it.
pub struct Page {
    served: Served,
    _page: Child,
    dir: tempfile::TempDir,
    checkpoint_key: String,
    store: Arc<FileCheckpointStore>,
    public: ApproverPublicKey,
    sign_in: String,
    browser: bool,
}

/// The next line `lines` prints, which must start with `prefix`.
async fn line(
    lines: &mut tokio::io::Lines<BufReader<ChildStdout>>,
    prefix: &str,
) -> Result<String, Error> {
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .map_err(|_| format!("nothing printed before {prefix:?} within 60 s"))??
        .ok_or_else(|| format!("the output ended before {prefix:?}"))?;
    line.strip_prefix(prefix)
        .map(str::to_owned)
        .ok_or_else(|| format!("expected {prefix:?}, got {line:?}").into())
}

/// A fresh 32-byte secret, as hex: this run's keys (a deployment keeps its
/// own in its secret store).
pub fn secret(purpose: &str) -> String {
    let seed = format!(
        "{purpose}|{}|{:?}|{:?}",
        std::process::id(),
        std::time::SystemTime::now(),
        std::thread::current().id()
    );
    adk_computer_use::digest::sha256_hex(seed)
}

/// Starts the server and the page; the agent's runtime (its own
/// credential, not the approver's) and the page.
pub async fn start(
    principal: &str,
    desktop: &str,
    browser: bool,
) -> Result<(Arc<ComputerUseMcpRuntime>, Page), Error> {
    let page = start_page(principal, desktop, &[], browser).await?;
    let runtime = ComputerUseMcpRuntime::connect(
        tokio::net::TcpStream::connect(&page.served.address).await?,
        McpRuntimeConfig::new(principal).with_credential(&page.served.agent),
    )
    .await?;
    Ok((Arc::new(runtime), page))
}

/// Starts the server (with `extra` arguments) and the page over a fresh
/// checkpoint store.
pub async fn start_page(
    principal: &str,
    desktop: &str,
    extra: &[&str],
    browser: bool,
) -> Result<Page, Error> {
    let served = serve(principal, desktop, extra).await?;
    let dir = tempfile::tempdir()?;
    let checkpoint_key = secret("checkpoints");
    let approver_key = secret("approver");
    let store = Arc::new(FileCheckpointStore::new(
        dir.path(),
        SealingKey::new(checkpoint_key.as_bytes().to_vec())?,
    )?);
    let public = ApproverKey::from_hex(&approver_key)?.public();
    let mut page = Command::new(binary::path(binary::APPROVALS))
        .args(["serve", "--store"])
        .arg(dir.path())
        .args(["--server", &served.address])
        .env("ADK_CHECKPOINT_KEY", &checkpoint_key)
        .env("ADK_APPROVER_KEY", &approver_key)
        .env("ADK_APPROVER_CREDENTIAL", &served.approver)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("computer-use-approvals could not be started: {e}"))?;
    let mut out = BufReader::new(page.stdout.take().ok_or("the page has no stdout")?).lines();
    let sign_in = line(&mut out, "approval page on ").await?;
    Ok(Page {
        served,
        _page: page,
        dir,
        checkpoint_key,
        store,
        public,
        sign_in,
        browser,
    })
}

impl Page {
    /// The server the page grants on.
    pub fn served(&self) -> &Served {
        &self.served
    }

    /// The checkpoint store's directory and its sealing key (hex), for an
    /// agent process of its own.
    pub fn store_at(&self) -> (&std::path::Path, &str) {
        (self.dir.path(), &self.checkpoint_key)
    }

    /// The store the agent suspends to.
    pub fn store(&self) -> Arc<dyn CheckpointStore> {
        self.store.clone()
    }

    /// The key the agent checks decisions with.
    pub fn public(&self) -> ApproverPublicKey {
        self.public.clone()
    }

    /// Waits until the suspended action `id` is decided on the page.
    pub async fn decided(&self, id: &CheckpointId) -> Result<(), Error> {
        if self.browser {
            return self.approve_in_browser(id).await;
        }
        println!("  decide on the approval page: {}", self.sign_in);
        let started = std::time::Instant::now();
        while started.elapsed() < DECISION_WAIT {
            if inspect(self.store.as_ref(), id)?.decided {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        Err(format!(
            "no decision on the page within {} s",
            DECISION_WAIT.as_secs()
        )
        .into())
    }

    /// Headless Chromium in the person's place: it reads the card, checks
    /// that a secret's value is masked and nowhere in the page, and clicks
    /// Approve.
    async fn approve_in_browser(&self, id: &CheckpointId) -> Result<(), Error> {
        let view = inspect(self.store.as_ref(), id)?;
        let (browser, _driver, _profile) = adk_computer_use_testkit::browser::browser().await;
        browser.goto(&self.sign_in).await;
        let card = browser.find(&format!("#c-{id}")).await?.text().await?;
        let source = browser.source().await?;
        for field in view.field_writes() {
            let named = format!("{:?} {:?}", field.role, field.label);
            if !card.contains(&named) {
                return Err(format!("the card does not name the field {named}: {card}").into());
            }
            println!(
                "  the page shows: {named} ← {}",
                if field.masked {
                    "••••• (masked)"
                } else {
                    field.value.as_str()
                }
            );
        }
        // The raw values of masked fields must not be anywhere in the page.
        let raw = view.arguments.clone().unwrap_or_default();
        let entries: Vec<serde_json::Value> = match raw.get("fields").and_then(|f| f.as_array()) {
            Some(fields) => fields.clone(),
            None => vec![raw.clone()],
        };
        for (entry, field) in entries.iter().zip(view.field_writes()) {
            if let Some(value) = entry.get("value").and_then(|v| v.as_str())
                && field.masked
                && source.contains(value)
            {
                return Err("a masked value is in the page's source".into());
            }
        }
        browser
            .find(&format!("#approve-{id}"))
            .await?
            .click()
            .await?;
        for _ in 0..100 {
            if let Ok(done) = browser.find(".done").await
                && done.text().await.is_ok_and(|t| t.contains("approved"))
            {
                println!("  approved on the page (headless Chromium standing in for the person)");
                browser.close().await;
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        browser.close().await;
        Err("the page did not confirm the approval".into())
    }
}
