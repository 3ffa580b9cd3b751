//! The server's MCP face: what it announces in `initialize` (its tools and
//! the effects it checks), its tool list, and each call handed to the
//! rules.

use super::access::Connection;
use super::server::Server;
use adk_computer_use::contracts::catalogue::tool;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, ErrorCode,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;
use std::sync::Arc;

impl ServerHandler for Server {
    /// Tools, and the effects this desktop checks after an action
    /// (`adk/effect-checks`), so a client can derive their postconditions.
    fn get_info(&self) -> ServerConfig {
        let (checks_clipboard, checks_values) = self
            .state
            .lock()
            .map(|state| {
                (
                    state.desktop.performs(tool::WRITE_CLIPBOARD),
                    state.desktop.reads_values_back(),
                )
            })
            .unwrap_or((false, false));
        let mut capabilities = ServerCapabilities::builder().enable_tools().build();
        if checks_clipboard || checks_values {
            let mut checks = if checks_clipboard {
                crate::desktop::simulated::announced_effect_checks()
            } else {
                serde_json::Map::new()
            };
            if checks_values {
                // The element is the one the action names: only the kind
                // is announced, and the client adds role, label and digest.
                // A form's check is of every field the action names, with
                // the digest of all their values.
                checks.insert(
                    tool::SET_VALUE.into(),
                    serde_json::json!({ "kind": "ui_element" }),
                );
                checks.insert(
                    tool::FILL_FORM.into(),
                    serde_json::json!({
                        "kind": "ui_element",
                        "role": adk_computer_use::runtime::FORM_CHECK_ROLE,
                    }),
                );
            }
            let mut experimental = rmcp::model::ExperimentalCapabilities::new();
            experimental.insert(
                adk_computer_use::contracts::EFFECT_CHECKS_CAPABILITY.into(),
                checks,
            );
            capabilities.experimental = Some(experimental);
        }
        ServerConfig::new(capabilities)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(Self::listed_tools()))
    }

    /// A `tools/call` whose parameters do not parse (`arguments: []`, say)
    /// reaches rmcp as an unknown request; upstream answers it -32603, an
    /// internal error, naming what it expected.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        if request.method == "tools/call" {
            let arguments = request
                .params
                .as_ref()
                .and_then(|p| p.get("arguments"))
                .map_or("nothing", adk_computer_use::contracts::json_kind);
            return Err(McpError::new(
                ErrorCode::INTERNAL_ERROR,
                format!("params.arguments: expected an object, received {arguments}"),
                None,
            ));
        }
        Err(McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            request.method,
            None,
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if !self.slow.is_zero() {
            tokio::time::sleep(self.slow).await;
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let cancel = context.ct;
        // Over TCP, the connection: a client that leaves cancels its calls
        // at once (rmcp cancels them only after draining the others).
        let connection = context.extensions.get::<Arc<Connection>>().cloned();
        let departed = connection.clone();
        let cancelled = async move {
            match departed {
                Some(connection) => tokio::select! {
                    () = cancel.cancelled() => {}
                    () = connection.departed() => {}
                },
                None => cancel.cancelled().await,
            }
        };
        Ok(self
            .respond(&request.name, arguments, cancelled, connection)
            .await
            .into())
    }
}
