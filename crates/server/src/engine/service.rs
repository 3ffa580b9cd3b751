//! What the MCP layer adds on the wire beyond the handler: upstream lists
//! every tool with `execution: {taskSupport: "forbidden"}` (its tools run
//! to completion; none is a task), a field rmcp's typed `Tool` does not
//! carry. [`ConnectionService`] answers `tools/list` with it and hands every other
//! request to [`Server`] unchanged.
//!
//! Served over TCP, it is also where a connection authenticates (see
//! [`super::access`]): its role is kept here, one [`ConnectionService`] per
//! connection, never in the desktop's shared state.

use adk_computer_use::contracts::catalogue::protocol::name as protocol;
use std::sync::Arc;

use rmcp::model::{CallToolResponse, ClientRequest, CustomResult, ServerResult};
use rmcp::service::{NotificationContext, RequestContext, Service};
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};

use super::Refusal;
use super::access::{APPROVER_CREDENTIAL_REQUIRED, Connection, Role};
use super::server::Server;

/// [`Server`] as the rmcp service that is served, to one client.
#[derive(Clone)]
pub struct ConnectionService {
    server: Server,
    /// `None`: the client is trusted (stdio, in-process); otherwise the
    /// connection that must authenticate.
    connection: Option<Arc<Connection>>,
}

impl ConnectionService {
    /// A service that trusts its one client (stdio, in-process).
    pub(super) fn trusted(server: Server) -> Self {
        Self {
            server,
            connection: None,
        }
    }

    /// A service whose client must authenticate on `connection`.
    pub(super) fn authenticated(server: Server, connection: Arc<Connection>) -> Self {
        Self {
            server,
            connection: Some(connection),
        }
    }

    /// Refuses what the connection's role may not ask for: anything before
    /// it authenticated, `approve_action` to the agent. `Ok(Some(answer))`
    /// answers the request here.
    fn admit(
        connection: &Connection,
        request: &ClientRequest,
    ) -> Result<Option<ServerResult>, McpError> {
        if let ClientRequest::InitializeRequest(init) = request {
            connection.authenticate(&init.params)?;
            return Ok(None);
        }
        let Some(role) = connection.role() else {
            return Err(Connection::not_authenticated());
        };
        if let ClientRequest::CallToolRequest(call) = request
            && call.params.name == protocol::APPROVE_ACTION
            && role != Role::Approver
        {
            let refusal = Server::refusal(Refusal::new(
                APPROVER_CREDENTIAL_REQUIRED,
                "approve_action needs the approver credential; this connection holds another role's",
            ));
            return Ok(Some(CallToolResponse::from(refusal).into()));
        }
        Ok(None)
    }

    /// The listed tools as JSON, each with its `execution` field.
    fn tools() -> Result<Value, McpError> {
        let mut tools = Vec::new();
        for tool in Server::listed_tools() {
            let mut tool = serde_json::to_value(tool)
                .map_err(|e| McpError::internal_error(e.to_string(), None))?;
            if let Value::Object(map) = &mut tool {
                map.insert("execution".into(), json!({ "taskSupport": "forbidden" }));
            }
            tools.push(tool);
        }
        Ok(json!({ "tools": tools }))
    }
}

impl Service<RoleServer> for ConnectionService {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        match request {
            ClientRequest::ListToolsRequest(_) => {
                if let Some(connection) = &self.connection
                    && connection.role().is_none()
                {
                    return Err(Connection::not_authenticated());
                }
                Ok(ServerResult::CustomResult(CustomResult(Self::tools()?)))
            }
            other => {
                let mut context = context;
                if let Some(connection) = &self.connection {
                    if let Some(answer) = Self::admit(connection, &other)? {
                        return Ok(answer);
                    }
                    context.extensions.insert(Arc::clone(connection));
                }
                Service::<RoleServer>::handle_request(&self.server, other, context).await
            }
        }
    }

    async fn handle_notification(
        &self,
        notification: rmcp::model::ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), McpError> {
        Service::<RoleServer>::handle_notification(&self.server, notification, context).await
    }

    fn get_info(&self) -> rmcp::model::ServerConfig {
        Service::<RoleServer>::get_info(&self.server)
    }

    fn supported_protocol_versions(
        &self,
    ) -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
        Service::<RoleServer>::supported_protocol_versions(&self.server)
    }
}
