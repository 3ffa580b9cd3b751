//! Bad input from the wire: arbitrary JSON and bytes fed to the MCP answer
//! decoding never panic and always come back as a value or a decode error;
//! oversized strings, arrays and nesting are refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use::ComputerUseError;
use adk_computer_use::contracts::limits::{
    MAX_ARRAY_ITEMS, MAX_DEPTH, MAX_STRING_BYTES, check_bounds,
};
use adk_computer_use::mcp::decode_tool_result;
use proptest::prelude::*;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        ".{0,16}".prop_map(Value::String),
        prop::sample::select(vec![
            "error",
            "lease_conflict",
            "receipt",
            "lease",
            "reservation"
        ])
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(5, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "error",
                    "message",
                    "receipt",
                    "lease",
                    "sessionId",
                    "x"
                ])
                .prop_map(String::from),
                inner,
                0..6,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn result(
    structured: Option<Value>,
    is_error: Option<bool>,
    text: Option<String>,
) -> CallToolResult {
    let mut result = match structured {
        Some(value) => CallToolResult::structured(value),
        None => CallToolResult::success(vec![]),
    };
    result.is_error = is_error;
    if let Some(text) = text {
        result.content = vec![ContentBlock::text(text)];
    }
    result
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_tool_result_decodes_or_errors(
        structured in prop::option::of(arbitrary_json()),
        is_error in prop::option::of(any::<bool>()),
        text in prop::option::of(".{0,32}"),
    ) {
        match decode_tool_result("execute_action", result(structured.clone(), is_error, text)) {
            Ok((value, _)) => prop_assert!(value.is_object() && is_error != Some(true)),
            Err(ComputerUseError::Decode { .. }) | Err(ComputerUseError::Refused { .. }) => {}
            Err(other) => prop_assert!(false, "unexpected error kind: {other}"),
        }
    }

    #[test]
    fn raw_bytes_never_panic_the_result_decoder(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(result) = serde_json::from_slice::<CallToolResult>(&bytes) {
            let _ = decode_tool_result("preview_action", result);
        }
    }
}

#[test]
fn a_text_only_answer_is_a_decode_error_not_a_guess() {
    let answer = result(
        None,
        None,
        Some(r#"{"receipt": {"receiptId": "r"}}"#.into()),
    );
    assert!(matches!(
        decode_tool_result("execute_action", answer),
        Err(ComputerUseError::Decode { .. })
    ));
}

#[test]
fn a_refusal_keeps_the_servers_code_and_a_clipped_message() {
    let answer = result(
        Some(json!({"error": "lease_conflict", "message": "x".repeat(100_000)})),
        Some(true),
        None,
    );
    match decode_tool_result("acquire_control_lease", answer) {
        Err(ComputerUseError::Refused { code, message, .. }) => {
            assert_eq!(code, "lease_conflict");
            assert!(message.len() <= 1024);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn oversized_strings_arrays_and_nesting_are_refused() {
    let long = json!({ "receipt": "x".repeat(MAX_STRING_BYTES + 1) });
    assert!(check_bounds("t", &long).is_err());
    let wide = json!({ "events": vec![0; MAX_ARRAY_ITEMS + 1] });
    assert!(check_bounds("t", &wide).is_err());
    let mut deep = json!(0);
    for _ in 0..MAX_DEPTH {
        deep = json!([deep]);
    }
    assert!(check_bounds("t", &deep).is_err());
    let fine = json!({ "events": vec![0; MAX_ARRAY_ITEMS], "text": "x".repeat(1024) });
    assert!(check_bounds("t", &fine).is_ok());
    for oversized in [long, wide, deep] {
        let answer = result(Some(oversized), None, None);
        assert!(matches!(
            decode_tool_result("get_session_events", answer),
            Err(ComputerUseError::Decode { .. })
        ));
    }
    let huge_image = CallToolResult::success(vec![ContentBlock::image(
        "A".repeat(MAX_STRING_BYTES + 1),
        "image/png",
    )]);
    assert!(matches!(
        decode_tool_result("execute_action", huge_image),
        Err(ComputerUseError::Decode { .. })
    ));
}

/// The code, message and details of the refusal `answer` decodes to.
fn refused(tool: &str, answer: CallToolResult) -> (String, String, Option<Value>) {
    match decode_tool_result(tool, answer) {
        Err(ComputerUseError::Refused {
            code,
            message,
            details,
            ..
        }) => (code, message, details.map(|d| *d)),
        other => panic!("{tool}: expected a typed refusal, got {other:?}"),
    }
}

#[test]
fn every_upstream_refusal_shape_is_typed_with_its_code_and_details() {
    // {error, message, details}
    let (code, message, details) = refused(
        "execute_action",
        result(
            Some(
                json!({"error": "lease_revoked", "message": "control lease is not active", "details": {"leaseId": "l-1"}}),
            ),
            Some(true),
            None,
        ),
    );
    assert_eq!(code, "lease_revoked");
    assert_eq!(message, "control lease is not active");
    assert_eq!(details, Some(json!({"leaseId": "l-1"})));

    // {error, <id>} without a message
    let (code, message, details) = refused(
        "release_control_lease",
        result(
            Some(json!({"error": "lease_not_active", "lease_id": "l-2"})),
            Some(true),
            None,
        ),
    );
    assert_eq!(code, "lease_not_active");
    assert!(message.contains("l-2"), "{message}");
    assert_eq!(details, Some(json!({"lease_id": "l-2"})));

    // A rejected receipt recorded under the action id.
    let (code, message, details) = refused(
        "execute_action",
        result(
            Some(
                json!({"error": "rejected", "receipt": {"receiptId": "r-1", "status": "rejected"}}),
            ),
            Some(true),
            None,
        ),
    );
    assert_eq!(code, "rejected");
    assert!(message.contains("new action id"), "{message}");
    assert_eq!(
        details
            .as_ref()
            .and_then(|d| d.pointer("/receipt/receiptId")),
        Some(&json!("r-1"))
    );

    // The MCP SDK's answer to arguments that fail the input schema.
    let (code, message, details) = refused(
        "execute_action",
        result(
            None,
            Some(true),
            Some("MCP error -32602: Input validation error: Invalid arguments for tool execute_action: expected string, received undefined at action_id".into()),
        ),
    );
    assert_eq!(code, "invalid_arguments");
    assert!(message.starts_with("Input validation error"), "{message}");
    assert_eq!(details, Some(json!({"mcpCode": -32602})));
}
