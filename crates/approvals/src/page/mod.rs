//! `computer-use-approvals serve`: the approval page.
//!
//! A person looks at what waits before deciding: the frame the action was
//! previewed from, with the target window's bounds and the pointer marked
//! on it, the tool and its arguments (masked when the action handles
//! secrets), the data labels, the policy's reasons, both digests, who asked
//! and the time left. Approve and Deny sign the decision with the
//! approver's key, which only this server holds; against a server that
//! issues grants (`--server`), Approve first obtains the grant with the
//! approver's credential.
//!
//! Why it can be trusted on a shared machine: it listens on loopback unless
//! told otherwise; every page lives under a path that is the credential
//! printed at start (no cookie: a browser sends cookies for 127.0.0.1 to
//! every port on it, so any local listener would get one), and its
//! referrer policy keeps that path from leaving the page; it answers only
//! to its own host name; nothing changes on GET; a POST must carry the
//! page's own form token and come from the page's own origin; decisions on
//! one checkpoint are taken one at a time, and an approval is asked of the
//! server only for a checkpoint still undecided; everything shown is
//! escaped (every character that draws nothing or may draw nothing, by
//! its Unicode properties: see `hidden`), every value is drawn in the
//! order of its characters (no right-to-left letter moves a number), and
//! the content security policy allows no script at all.

mod card;
mod report;

use card::{STYLE, card};
use std::net::SocketAddr;
use std::sync::Arc;

use adk_computer_use::ComputerUseError;
use adk_computer_use::auth::secret::{random_token, same_secret as same};
use adk_computer_use::chain::{
    Approval, ApproverKey, CheckpointId, CheckpointStore, Decision, decide, inspect, pending,
    reported,
};
use axum::Router;
use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use html_escape::{encode_double_quoted_attribute as attr, encode_text as text};

/// `value` (already through [`crate::safe`]) as HTML drawn in the order of
/// its characters, left to right, whatever their direction: a
/// right-to-left word cannot carry the numbers around it to another place
/// ("transfer א 100 ב 900" drawn with 900 first). `<bdo dir="ltr">`
/// isolates the value from what surrounds it and overrides the direction
/// inside it (the page's style says so too, not only the browser's);
/// a right-to-left word therefore reads letter by letter from the left,
/// which is the order of the bytes approved.
fn shown(value: &str) -> String {
    format!("<bdo dir=\"ltr\">{}</bdo>", text(value))
}
use serde::Deserialize;

/// What the page's handlers share.
struct Page {
    store: Arc<dyn CheckpointStore>,
    approver: Arc<ApproverKey>,
    /// The credential printed at start (and the cookie's value).
    credential: String,
    /// The token every form carries back.
    form_token: String,
    /// The page's own origin (`http://127.0.0.1:PORT`).
    origin: String,
    /// The server that issues grants, if any.
    server: Option<String>,
    /// Decisions are taken one at a time.
    deciding: tokio::sync::Mutex<()>,
}

/// Serves the page over `store` until the process ends.
pub fn serve(
    store: Box<dyn CheckpointStore>,
    approver: ApproverKey,
    listen: &str,
    remote_origin: Option<String>,
    server: Option<String>,
) -> Result<(), String> {
    let address: SocketAddr = listen
        .parse()
        .map_err(|e| format!("--listen {listen:?} is not an address: {e}"))?;
    if !address.ip().is_loopback() && remote_origin.is_none() {
        return Err(format!(
            "--listen {listen} is not a loopback address; the page shows what agents are about to do: pass --allow-remote ORIGIN (the address people open, e.g. http://host:PORT, behind TLS you provide) to serve it beyond this machine"
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|e| format!("cannot listen on {address}: {e}"))?;
        let bound = listener
            .local_addr()
            .map_err(|e| format!("no local address: {e}"))?;
        let credential = random_token().map_err(|e| e.to_string())?;
        let page = Arc::new(Page {
            store: Arc::from(store),
            approver: Arc::new(approver),
            form_token: random_token().map_err(|e| e.to_string())?,
            origin: remote_origin.unwrap_or_else(|| format!("http://{bound}")),
            server,
            credential,
            deciding: tokio::sync::Mutex::new(()),
        });
        println!("approval page on {}/{}/", page.origin, page.credential);
        let app = Router::new()
            .route("/{secret}/", get(list))
            .route("/{secret}/decide", post(decide_route))
            .with_state(page)
            .layer(axum::middleware::map_response(harden));
        axum::serve(listener, app)
            .await
            .map_err(|e| format!("the page stopped: {e}"))
    })
}

/// [`hardened`], for every answer the router gives (its own 404s and 405s
/// included).
async fn harden(response: Response) -> Response {
    hardened(response)
}

/// Headers every answer carries: no script, no framing, no sniffing, no
/// referrer beyond the page itself.
fn hardened(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; img-src data:; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // `same-origin`, not `no-referrer`: under `no-referrer` a browser sends
    // `Origin: null` on the page's own form posts.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A refusal as plain text, its words through [`crate::safe`] as the
/// page's own are: an error can quote what a checkpoint or an agent wrote.
fn refused(status: StatusCode, why: &str) -> Response {
    hardened(
        (
            status,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            super::safe(why),
        )
            .into_response(),
    )
}

/// Whether the request names this page as its host (a name that merely
/// resolves here, as in DNS rebinding, is not this page).
fn for_this_page(page: &Page, headers: &HeaderMap) -> bool {
    let authority = page
        .origin
        .trim_start_matches("http://")
        .trim_start_matches("https://");
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|host| host == authority)
}

/// Whether the request is for this page and its path carries the secret.
fn signed_in(page: &Page, headers: &HeaderMap, secret: &str) -> bool {
    for_this_page(page, headers) && same(secret, &page.credential)
}

#[derive(Deserialize)]
struct ListQuery {
    approved: Option<String>,
    denied: Option<String>,
}

async fn list(
    State(page): State<Arc<Page>>,
    Path(secret): Path<String>,
    headers: HeaderMap,
    Query(query): Query<ListQuery>,
) -> Response {
    if !signed_in(&page, &headers, &secret) {
        return refused(
            StatusCode::UNAUTHORIZED,
            "open the link the page printed when it started",
        );
    }
    let store = Arc::clone(&page.store);
    let listed = tokio::task::spawn_blocking(move || pending(store.as_ref())).await;
    let listed = match listed {
        Ok(Ok(listed)) => listed,
        Ok(Err(err)) => {
            return refused(StatusCode::INTERNAL_SERVER_ERROR, &err.to_string());
        }
        Err(err) => return refused(StatusCode::INTERNAL_SERVER_ERROR, &err.to_string()),
    };
    let store = Arc::clone(&page.store);
    let happened =
        tokio::task::spawn_blocking(move || reported(store.as_ref(), report::SHOWN)).await;
    let happened = match happened {
        Ok(Ok(happened)) => report::section(&happened),
        Ok(Err(err)) => format!(
            "<p class=\"unreadable\">The agents' reports cannot be read: {}</p>",
            shown(&super::safe(&err.to_string()))
        ),
        Err(err) => return refused(StatusCode::INTERNAL_SERVER_ERROR, &err.to_string()),
    };
    let mut body = String::new();
    // Only what this server said: a decision and a well-formed id.
    let done = match (&query.approved, &query.denied) {
        (Some(id), None) => id.parse::<CheckpointId>().ok().map(|id| ("approved", id)),
        (None, Some(id)) => id.parse::<CheckpointId>().ok().map(|id| ("denied", id)),
        _ => None,
    };
    if let Some((what, id)) = done {
        // The action the person decided, by the id the card showed it
        // with; once the agent resumed it the checkpoint is gone from the
        // store, and its id is all there is to name.
        let store = Arc::clone(&page.store);
        let looked = id.clone();
        let action = tokio::task::spawn_blocking(move || inspect(store.as_ref(), &looked))
            .await
            .ok()
            .and_then(Result::ok)
            .map(|view| view.action_id);
        body.push_str(&match action {
            Some(action) => format!(
                "<p class=\"done\">{what} action {} (checkpoint {id}). What happened next shows below once the agent has run it.</p>",
                shown(&super::safe(&action))
            ),
            None => format!("<p class=\"done\">{what} checkpoint {id}</p>"),
        });
    }
    if listed.is_empty() {
        body.push_str("<p id=\"nothing\">Nothing waits for a decision.</p>");
    }
    for (id, view) in &listed {
        match view {
            Ok(view) => body.push_str(&card(&page, view)),
            Err(err) => body.push_str(&format!(
                "<section class=\"unreadable\" id=\"c-{id}\"><h2>{id}</h2><p>UNREADABLE: {}</p><p>This checkpoint cannot be trusted and cannot be decided here.</p></section>",
                shown(&super::safe(&err.to_string())),
                id = attr(id.as_str()),
            )),
        }
    }
    hardened(
        (
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            format!(
                "<!doctype html><html><head><meta charset=\"utf-8\"><title>Approvals</title><style>{STYLE}</style></head><body><h1>Waiting for a decision</h1>{body}{happened}</body></html>"
            ),
        )
            .into_response(),
    )
}

#[derive(Deserialize)]
struct DecideForm {
    id: String,
    token: String,
    decision: String,
    reason: Option<String>,
}

/// Whether a POST comes from the page itself: its `Origin` must be the
/// page's, and `Sec-Fetch-Site`, when sent, must say `same-origin`. A
/// browser sends `Origin` on every form post; a request without one is
/// refused.
fn same_origin(page: &Page, headers: &HeaderMap) -> bool {
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|o| o.to_str().ok())
        .is_some_and(|o| o == page.origin);
    let site = headers
        .get("sec-fetch-site")
        .map(|v| v.to_str().is_ok_and(|site| site == "same-origin"))
        .unwrap_or(true);
    origin && site
}

async fn decide_route(
    State(page): State<Arc<Page>>,
    Path(secret): Path<String>,
    headers: HeaderMap,
    Form(form): Form<DecideForm>,
) -> Response {
    if !signed_in(&page, &headers, &secret) {
        return refused(StatusCode::UNAUTHORIZED, "not this page's link");
    }
    if !same_origin(&page, &headers) || !same(&form.token, &page.form_token) {
        return refused(
            StatusCode::FORBIDDEN,
            "a decision is taken only from this page's own form",
        );
    }
    let id: CheckpointId = match form.id.parse() {
        Ok(id) => id,
        Err(err) => return refused(StatusCode::BAD_REQUEST, &ComputerUseError::to_string(&err)),
    };
    // One decision at a time: the check that a checkpoint is undecided,
    // the grant and the record are one step for this page.
    let _deciding = page.deciding.lock().await;
    let done = match form.decision.as_str() {
        "approve" => approve(&page, &id).await,
        "deny" => {
            let reason = form
                .reason
                .filter(|r| !r.trim().is_empty())
                .unwrap_or_else(|| "denied on the approval page".to_owned());
            record(&page, &id, Decision::Deny { reason })
                .await
                .map(|()| "denied")
        }
        _ => Err("expected approve or deny".to_owned()),
    };
    match done {
        Ok(what) => {
            let location = format!("/{}/?{what}={id}", page.credential);
            hardened((StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response())
        }
        Err(why) => refused(StatusCode::CONFLICT, &why),
    }
}

/// Approves `id`: with a grant from `--server` when one is configured,
/// else held by the runtime.
async fn approve(page: &Page, id: &CheckpointId) -> Result<&'static str, String> {
    let store = Arc::clone(&page.store);
    let looked = id.clone();
    let view = tokio::task::spawn_blocking(move || inspect(store.as_ref(), &looked))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    // No grant is asked of the server for a checkpoint already decided.
    if view.decided {
        return Err(format!("{id}: a decision is already recorded"));
    }
    let approval = match &page.server {
        Some(server) => super::grant(server, &view, Arc::clone(&page.store)).await?,
        None => Approval::runtime_held(&view.action_id, &view.action_digest, &view.policy_digest),
    };
    record(page, id, Decision::Approve(approval)).await?;
    Ok("approved")
}

async fn record(page: &Page, id: &CheckpointId, decision: Decision) -> Result<(), String> {
    let store = Arc::clone(&page.store);
    let key = Arc::clone(&page.approver);
    let id = id.clone();
    tokio::task::spawn_blocking(move || decide(store.as_ref(), &id, &decision, &key))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A refusal answered as plain text shows hidden characters escaped,
    /// as the page does: its words can quote an agent's.
    #[tokio::test]
    async fn a_plain_text_refusal_escapes_what_draws_nothing() {
        let response = refused(
            StatusCode::CONFLICT,
            "no\u{E0049}\u{E0047} such action\u{202E}",
        );
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        let text = String::from_utf8(body.to_vec()).unwrap();
        assert_eq!(text, "no\\u{e0049}\\u{e0047} such action\\u{202e}");
    }
}
