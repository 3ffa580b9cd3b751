//! The runtime session's own tools: start and read it, its events and
//! follow-ups, its lifecycle, and deleting it. None of them mutates the
//! desktop.

use crate::contracts::catalogue::protocol::name as protocol;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::ComputerUseMcpRuntime;
use super::wire::{decode, lock};
use crate::ComputerUseError;
use crate::binding::bind;
use crate::contracts::*;

impl ComputerUseMcpRuntime {
    /// Starts a runtime session and acts in it from now on.
    pub async fn start_session(
        &self,
        objective: Option<&str>,
        execution_group_id: Option<&str>,
    ) -> Result<RuntimeSession, ComputerUseError> {
        let mut answer = self
            .call_json(
                protocol::START_SESSION,
                json!({ "objective": objective, "execution_group_id": execution_group_id }),
            )
            .await?;
        let session: RuntimeSession = decode(protocol::START_SESSION, "session", &mut answer)?;
        bind(
            "RuntimeSession",
            "principalId",
            &self.config.principal_id,
            &session.principal_id,
        )?;
        if session.state != "running" {
            return Err(ComputerUseError::invalid(
                "RuntimeSession",
                "state",
                "running",
                session.state.clone(),
            ));
        }
        *lock(&self.session_id) = Some(session.session_id.clone());
        *lock(&self.execution_group_id) = session.execution_group_id.clone();
        Ok(session)
    }

    /// Reads the session.
    pub async fn get_session(&self) -> Result<RuntimeSession, ComputerUseError> {
        let mut answer = self
            .call_json(
                protocol::GET_SESSION,
                json!({ "session_id": self.session_id()? }),
            )
            .await?;
        let session: RuntimeSession = decode(protocol::GET_SESSION, "session", &mut answer)?;
        self.check_session("RuntimeSession", &session.session_id, &session.principal_id)?;
        Ok(session)
    }

    /// Reads one page of a session-scoped list (`tool` answers with the page
    /// itself); the caller checks what the page holds.
    async fn page<P: DeserializeOwned>(
        &self,
        tool: &str,
        session_id: &str,
        after_sequence: Option<u64>,
        limit: Option<u32>,
    ) -> Result<P, ComputerUseError> {
        let answer = self
            .call_json(
                tool,
                json!({ "session_id": session_id, "after_sequence": after_sequence, "limit": limit }),
            )
            .await?;
        serde_json::from_value(answer)
            .map_err(|err| ComputerUseError::decode(format!("{tool} answer"), err))
    }

    /// Reads a page of the session's events; every event must be this
    /// session's and this principal's.
    pub async fn get_session_events(
        &self,
        after_sequence: Option<u64>,
        limit: Option<u32>,
    ) -> Result<SessionEventPage, ComputerUseError> {
        self.events_of(&self.session_id()?, after_sequence, limit)
            .await
    }

    /// A page of the events of the runtime session `session_id`; every
    /// event must be that session's and this principal's.
    pub(super) async fn events_of(
        &self,
        session_id: &str,
        after_sequence: Option<u64>,
        limit: Option<u32>,
    ) -> Result<SessionEventPage, ComputerUseError> {
        let page: SessionEventPage = self
            .page(
                protocol::GET_SESSION_EVENTS,
                session_id,
                after_sequence,
                limit,
            )
            .await?;
        for event in &page.events {
            bind("SessionEvent", "sessionId", session_id, &event.session_id)?;
            bind(
                "SessionEvent",
                "principalId",
                &self.config.principal_id,
                &event.principal_id,
            )?;
        }
        Ok(page)
    }

    /// Reads every event of the session, page by page.
    pub async fn all_session_events(&self) -> Result<Vec<SessionEvent>, ComputerUseError> {
        let mut events = Vec::new();
        let mut after = 0;
        loop {
            let page = self.get_session_events(Some(after), Some(1000)).await?;
            if page.events.is_empty() || page.next_sequence <= after {
                return Ok(events);
            }
            after = page.next_sequence;
            events.extend(page.events);
        }
    }

    /// Adds an instruction to the session.
    pub async fn submit_follow_up(
        &self,
        instruction: &str,
    ) -> Result<SessionFollowUp, ComputerUseError> {
        let mut answer = self
            .call_json(
                protocol::SUBMIT_FOLLOW_UP,
                json!({ "session_id": self.session_id()?, "instruction": instruction }),
            )
            .await?;
        let follow_up: SessionFollowUp =
            decode(protocol::SUBMIT_FOLLOW_UP, "follow_up", &mut answer)?;
        self.check_session(
            "SessionFollowUp",
            &follow_up.session_id,
            &follow_up.principal_id,
        )?;
        Ok(follow_up)
    }

    /// Reads a page of the session's follow-ups.
    pub async fn get_follow_ups(
        &self,
        after_sequence: Option<u64>,
        limit: Option<u32>,
    ) -> Result<FollowUpPage, ComputerUseError> {
        let page: FollowUpPage = self
            .page(
                protocol::GET_FOLLOW_UPS,
                &self.session_id()?,
                after_sequence,
                limit,
            )
            .await?;
        for follow_up in &page.follow_ups {
            self.check_session(
                "SessionFollowUp",
                &follow_up.session_id,
                &follow_up.principal_id,
            )?;
        }
        Ok(page)
    }

    /// Deletes a terminal session.
    pub async fn delete_session(
        &self,
        session_id: &str,
    ) -> Result<SessionDeletionResult, ComputerUseError> {
        let mut answer = self
            .call_json(
                protocol::DELETE_SESSION,
                json!({ "session_id": session_id, "confirm": true }),
            )
            .await?;
        let deletion: SessionDeletionResult =
            decode(protocol::DELETE_SESSION, "deletion", &mut answer)?;
        bind(
            "SessionDeletionResult",
            "sessionId",
            session_id,
            &deletion.session_id,
        )?;
        Ok(deletion)
    }

    /// Deletes terminal sessions last changed before `older_than` (RFC 3339).
    pub async fn prune_sessions(
        &self,
        older_than: &str,
        limit: Option<u32>,
    ) -> Result<Vec<SessionDeletionResult>, ComputerUseError> {
        crate::clock::parse_rfc3339(protocol::PRUNE_SESSIONS, "olderThan", older_than)?;
        let mut answer = self
            .call_json(
                protocol::PRUNE_SESSIONS,
                json!({ "older_than": older_than, "limit": limit, "confirm": true }),
            )
            .await?;
        decode(protocol::PRUNE_SESSIONS, "deletions", &mut answer)
    }

    /// Resumes a paused session.
    pub async fn resume_session(
        &self,
        reason: Option<&str>,
    ) -> Result<RuntimeSession, ComputerUseError> {
        self.session_state_call(protocol::RESUME_SESSION, reason)
            .await
    }

    pub(super) async fn session_state_call(
        &self,
        tool: &str,
        reason: Option<&str>,
    ) -> Result<RuntimeSession, ComputerUseError> {
        let mut answer = self
            .call_json(
                tool,
                json!({ "session_id": self.session_id()?, "reason": reason }),
            )
            .await?;
        let session: RuntimeSession = decode(tool, "session", &mut answer)?;
        self.check_session("RuntimeSession", &session.session_id, &session.principal_id)?;
        Ok(session)
    }
}
