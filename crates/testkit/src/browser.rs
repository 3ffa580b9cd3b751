//! Headless Chromium driven over W3C WebDriver (`chromedriver`), for the
//! tests and examples that click the approval page as a person would: the
//! few commands they need, over plain HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::json;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn spawn(program: &str, args: &[&str]) -> tokio::process::Child {
    tokio::process::Command::new(program)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|err| panic!("{program} could not be started: {err}"))
}

/// Headless Chromium through chromedriver, with a profile of its own.
pub async fn browser() -> (Browser, tokio::process::Child, tempfile::TempDir) {
    let port = free_port();
    let driver = spawn("chromedriver", &[&format!("--port={port}")]);
    let profile = tempfile::tempdir().unwrap();
    let capabilities = json!({ "capabilities": { "alwaysMatch": {
        "browserName": "chrome",
        "goog:chromeOptions": {
            "binary": "/usr/bin/chromium",
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1400,1600",
                format!("--user-data-dir={}", profile.path().display()),
            ]
        }
    } } });
    let http = reqwest::Client::new();
    for _ in 0..100 {
        let started = http
            .post(format!("http://127.0.0.1:{port}/session"))
            .json(&capabilities)
            .send()
            .await;
        if let Ok(answer) = started
            && let Ok(body) = answer.json::<serde_json::Value>().await
            && let Some(id) = body["value"]["sessionId"].as_str()
        {
            let base = format!("http://127.0.0.1:{port}/session/{id}");
            return (Browser { http, base }, driver, profile);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("chromedriver did not answer");
}

/// The few WebDriver commands these tests need (W3C WebDriver over HTTP:
/// a JSON body in, `{"value": ...}` out).
pub struct Browser {
    http: reqwest::Client,
    base: String,
}

/// An element the browser found.
pub struct Element<'a> {
    browser: &'a Browser,
    id: String,
}

/// The key WebDriver names an element reference with.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

impl Browser {
    async fn command(
        &self,
        post: Option<serde_json::Value>,
        path: &str,
    ) -> Result<serde_json::Value, String> {
        let url = format!("{}{path}", self.base);
        let request = match post {
            Some(body) => self.http.post(url).json(&body),
            None => self.http.get(url),
        };
        let answer: serde_json::Value = request
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        let value = answer["value"].clone();
        match value.get("error") {
            Some(error) => Err(format!("{error}: {}", value["message"])),
            None => Ok(value),
        }
    }

    /// Opens `url`.
    pub async fn goto(&self, url: &str) {
        self.command(Some(json!({ "url": url })), "/url")
            .await
            .unwrap();
    }

    /// The first element `css` selects.
    pub async fn find(&self, css: &str) -> Result<Element<'_>, String> {
        let found = self
            .command(
                Some(json!({ "using": "css selector", "value": css })),
                "/element",
            )
            .await?;
        let id = found[ELEMENT]
            .as_str()
            .ok_or_else(|| format!("no element reference in {found}"))?
            .to_owned();
        Ok(Element { browser: self, id })
    }

    /// The page's HTML as the browser holds it now.
    pub async fn source(&self) -> Result<String, String> {
        Ok(self
            .command(None, "/source")
            .await?
            .as_str()
            .unwrap_or_default()
            .to_owned())
    }

    /// What `script` (a function body; `arguments` holds `args`) returns,
    /// run in the page by the browser itself (a page's own policy that
    /// forbids scripts does not apply to the browser's driver).
    pub async fn script(
        &self,
        script: &str,
        args: serde_json::Value,
    ) -> Result<serde_json::Value, String> {
        self.command(
            Some(json!({ "script": script, "args": args })),
            "/execute/sync",
        )
        .await
    }

    /// A PNG of the page.
    pub async fn screenshot(&self) -> Vec<u8> {
        use base64::Engine;
        let shot = self.command(None, "/screenshot").await.unwrap();
        base64::engine::general_purpose::STANDARD
            .decode(shot.as_str().unwrap_or_default())
            .unwrap()
    }

    /// Ends the browser session.
    pub async fn close(&self) {
        let _ = self.http.delete(&self.base).send().await;
    }
}

impl Element<'_> {
    fn path(&self, rest: &str) -> String {
        format!("/element/{}{rest}", self.id)
    }

    /// The element's rendered text.
    pub async fn text(&self) -> Result<String, String> {
        let text = self.browser.command(None, &self.path("/text")).await?;
        Ok(text.as_str().unwrap_or_default().to_owned())
    }

    /// The element's attribute `name`, if set.
    pub async fn attr(&self, name: &str) -> Result<Option<String>, String> {
        let value = self
            .browser
            .command(None, &self.path(&format!("/attribute/{name}")))
            .await?;
        Ok(value.as_str().map(str::to_owned))
    }

    /// The element's inner HTML.
    pub async fn html(&self) -> Result<String, String> {
        let value = self
            .browser
            .command(None, &self.path("/property/innerHTML"))
            .await?;
        Ok(value.as_str().unwrap_or_default().to_owned())
    }

    /// Clicks the element.
    pub async fn click(&self) -> Result<(), String> {
        self.browser
            .command(Some(json!({})), &self.path("/click"))
            .await
            .map(|_| ())
    }

    /// Clears a form field.
    pub async fn clear(&self) -> Result<(), String> {
        self.browser
            .command(Some(json!({})), &self.path("/clear"))
            .await
            .map(|_| ())
    }

    /// Types `text` into the element.
    pub async fn send_keys(&self, text: &str) -> Result<(), String> {
        self.browser
            .command(Some(json!({ "text": text })), &self.path("/value"))
            .await
            .map(|_| ())
    }
}
