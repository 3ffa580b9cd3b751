//! What the MCP layer adds on the wire beyond the handler: upstream lists
//! every tool with `execution: {taskSupport: "forbidden"}` (its tools run
//! to completion; none is a task), a field rmcp's typed `Tool` does not
//! carry. [`SimService`] answers `tools/list` with it and hands every other
//! request to [`SimServer`] unchanged.

use rmcp::model::{ClientRequest, CustomResult, ServerResult};
use rmcp::service::{NotificationContext, RequestContext, Service};
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};

use super::server::SimServer;

/// [`SimServer`] as the rmcp service that is served.
#[derive(Clone)]
pub struct SimService(pub(super) SimServer);

impl SimService {
    /// The listed tools as JSON, each with its `execution` field.
    fn tools() -> Result<Value, McpError> {
        let mut tools = Vec::new();
        for tool in SimServer::listed_tools() {
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

impl Service<RoleServer> for SimService {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        match request {
            ClientRequest::ListToolsRequest(_) => {
                Ok(ServerResult::CustomResult(CustomResult(Self::tools()?)))
            }
            other => Service::<RoleServer>::handle_request(&self.0, other, context).await,
        }
    }

    async fn handle_notification(
        &self,
        notification: rmcp::model::ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), McpError> {
        Service::<RoleServer>::handle_notification(&self.0, notification, context).await
    }

    fn get_info(&self) -> rmcp::model::ServerConfig {
        Service::<RoleServer>::get_info(&self.0)
    }

    fn supported_protocol_versions(
        &self,
    ) -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
        Service::<RoleServer>::supported_protocol_versions(&self.0)
    }
}
