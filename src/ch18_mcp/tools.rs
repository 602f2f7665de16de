//! Chapter 18 — how a server's tools look to the model, and how their results come back.
//!
//! A server's tool `read_text_file` becomes `mcp__files__read_text_file`: the prefix says
//! where it runs, and the name keeps to what the Chat Completions API accepts (letters,
//! digits, `_` and `-`, at most 64). Its JSON schema is passed on almost as it is: the server
//! knows its arguments best. Results map the other way: `text` content is text; an image,
//! audio or a resource becomes a short placeholder (this agent sends the model text only);
//! `isError` makes the result an error. Every failure of the transport is a tool result
//! too, and says what is known about the call: not run, interrupted, timed out — or an
//! **unknown outcome** when the server died while it ran.

use crate::ch02_loop::{ToolOutput, ToolStatus};
use crate::ch18_mcp::rpc::RpcError;
use crate::ch18_mcp::server::{RemoteTool, describe};
use crate::text::shorten;
use serde_json::{Value, json};

/// A function name the API accepts is at most this long.
const NAME_MAX: usize = 64;
const DESCRIPTION_MAX_CHARS: usize = 1_000;
/// A schema larger than this (serialized) is replaced by "any object".
const SCHEMA_MAX_BYTES: usize = 16 * 1024;
/// The schemas of all servers' tools together, serialized: every request carries them all, so
/// tools past this sum are left out (a quarter of a 128k-token window, at the estimate's rate).
pub const SCHEMAS_MAX_BYTES: usize = 256 * 1024;

// ANCHOR: naming
/// `mcp__<server>__<tool>`, with every other character made `_` and cut to 64 bytes.
pub(crate) fn exposed_name(server: &str, tool: &str) -> String {
    let clean = |text: &str| -> String {
        text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
    };
    let mut name = format!("mcp__{}__{}", clean(server), clean(tool));
    name.truncate(NAME_MAX);
    name
}

/// The schema the model sees: the server's, minus `$schema`, as a function of the API.
pub fn schema(exposed: &str, tool: &RemoteTool) -> Value {
    let mut parameters = match &tool.schema {
        Value::Object(object) if object.get("type").and_then(Value::as_str) == Some("object") => {
            let mut object = object.clone();
            object.remove("$schema");
            Value::Object(object)
        }
        _ => json!({"type": "object", "properties": {}}),
    };
    if parameters.to_string().len() > SCHEMA_MAX_BYTES {
        parameters = json!({"type": "object"});
    }
    let description = shorten(tool.description.trim(), DESCRIPTION_MAX_CHARS);
    json!({"type": "function", "function": {"name": exposed, "description": description, "parameters": parameters}})
}
// ANCHOR_END: naming

// ANCHOR: result
/// A `tools/call` result as the model reads it.
pub(crate) fn render_result(result: &Value) -> ToolOutput {
    let mut parts: Vec<String> = Vec::new();
    for item in result.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
        let field = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or("?");
        parts.push(match item.get("type").and_then(Value::as_str).unwrap_or("?") {
            "text" => field("text").to_string(),
            "image" => format!("[image, {}: not shown to the model]", field("mimeType")),
            "audio" => format!("[audio, {}: not shown to the model]", field("mimeType")),
            "resource_link" => format!("[resource link: {}]", shorten(field("uri"), 200)),
            "resource" => {
                let uri = item.get("resource").and_then(|r| r.get("uri")).and_then(Value::as_str);
                format!("[resource: {}]", shorten(uri.unwrap_or("?"), 200))
            }
            other => format!("[{} content: not shown to the model]", shorten(other, 40)),
        });
    }
    // A server that answers only with structured content still answers something.
    if parts.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        parts.push(structured.to_string());
    }
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let content = if parts.is_empty() { "(no content)".to_string() } else { parts.join("\n") };
    ToolOutput { content, status: if is_error { ToolStatus::Error } else { ToolStatus::Ok } }
}
// ANCHOR_END: result

/// A call that got no result, as the model reads it: what is known about its effect.
pub fn failure(server: &str, error: &RpcError) -> ToolOutput {
    let why = describe(error);
    let (content, status) = match error {
        RpcError::NotStarted(_) => {
            (format!("not run: the MCP server `{server}` could not be started: {why}"), ToolStatus::NotRun)
        }
        RpcError::Interrupted => (
            format!("interrupted by the user; the MCP server `{server}` was asked to cancel the call"),
            ToolStatus::Interrupted,
        ),
        RpcError::Closed(_) => (
            format!(
                "unknown outcome: {why} during this call, so it may have finished, partly run or not run \
                 at all. The MCP server `{server}` will be started again on the next call; check the \
                 current state before relying on it."
            ),
            ToolStatus::Unknown,
        ),
        RpcError::Timeout(_) => (
            format!(
                "the MCP server `{server}` gave no answer in time ({why}); it was asked to cancel the \
                 call, which may have done part of its work"
            ),
            ToolStatus::Error,
        ),
        RpcError::Remote(_) | RpcError::TooLarge(_) | RpcError::Write(_) => {
            (format!("the MCP call failed: {why}"), ToolStatus::Error)
        }
    };
    ToolOutput { content, status }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_to_what_the_api_accepts() {
        assert_eq!(exposed_name("files", "read_text_file"), "mcp__files__read_text_file");
        assert_eq!(exposed_name("ev", "get-sum"), "mcp__ev__get-sum");
        assert_eq!(exposed_name("a", "tool.with spaces/é"), "mcp__a__tool_with_spaces__");
        assert_eq!(exposed_name("a", &"x".repeat(100)).len(), 64);
    }

    #[test]
    fn schemas_pass_through_without_their_dialect() {
        let tool = RemoteTool {
            name: "echo".into(),
            description: "Echoes".into(),
            schema: json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                "properties": {"message": {"type": "string"}}, "required": ["message"]}),
        };
        let shown = schema("mcp__ev__echo", &tool);
        assert_eq!(shown["function"]["name"], "mcp__ev__echo");
        assert_eq!(shown["function"]["parameters"]["required"][0], "message");
        assert!(shown["function"]["parameters"].get("$schema").is_none());
        let odd = RemoteTool { schema: json!("not a schema"), ..tool };
        assert_eq!(schema("x", &odd)["function"]["parameters"]["type"], "object");
    }

    #[test]
    fn content_maps_to_text_and_placeholders() {
        let result = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///x", "text": "t"}}
        ]});
        let output = render_result(&result);
        assert_eq!(output.status, ToolStatus::Ok);
        assert_eq!(
            output.content,
            "hello\n[image, image/png: not shown to the model]\n[resource: file:///x]"
        );
        let error = render_result(&json!({"content": [{"type": "text", "text": "bad"}], "isError": true}));
        assert_eq!((error.content.as_str(), error.status), ("bad", ToolStatus::Error));
        assert_eq!(render_result(&json!({})).content, "(no content)");
    }

    #[test]
    fn a_server_that_died_mid_call_is_an_unknown_outcome() {
        let died = failure("ev", &RpcError::Closed("the server was killed by signal 9".into()));
        assert_eq!(died.status, ToolStatus::Unknown);
        assert!(
            died.content.starts_with("unknown outcome: the server was killed by signal 9"),
            "{}",
            died.content
        );
        assert_eq!(failure("ev", &RpcError::NotStarted("x".into())).status, ToolStatus::NotRun);
        assert_eq!(failure("ev", &RpcError::Interrupted).status, ToolStatus::Interrupted);
    }
}
