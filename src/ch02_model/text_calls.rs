//! Chapter 2 — a tool call written as text.
//!
//! A model calls a tool by writing special tokens; the *server* turns them into the
//! `tool_calls` field, using the model's chat template. When the server does not do that —
//! llama.cpp's `llama-server` started without `--jinja`, a template without tool support, a
//! vLLM without `--tool-call-parser` — the call arrives as plain text: `{"name": "bash",
//! "arguments": {…}}`, often in a ```` ```json ```` fence or `<tool_call>` tags. To the loop
//! that is a final answer, so the agent would print JSON and exit 0, having done nothing.
//!
//! [`TextCallCheck`] wraps a model and looks at each final answer. When the whole answer
//! parses as a call to one of the tools offered, it says so (a `warning` notice, on stderr)
//! with the likely cause and where the README explains it. It does not run the call: text is
//! not a tool call, and guessing what a model meant is how an agent does what nobody asked.

use crate::ch02_loop::{Error, Event, Model, Observer, Reply, Request};
use serde_json::Value;

// ANCHOR: text_calls
/// A model whose final answers are checked for tool calls written as text.
pub struct TextCallCheck<M> {
    pub inner: M,
}

impl<M: Model> Model for TextCallCheck<M> {
    fn complete(&mut self, request: &Request, observer: &mut dyn Observer) -> Result<Reply, Error> {
        let reply = self.inner.complete(request, observer)?;
        if reply.tool_calls.is_empty()
            && let Some(name) = reply.content.as_deref().and_then(|text| text_tool_call(text, request.tools))
        {
            let text = format!(
                "the model's answer is a call to {name} written as text, so nothing ran. The server \
                 did not turn the model's tool-call syntax into tool calls: for llama.cpp, start \
                 llama-server with --jinja (and a chat template that supports tools); for vLLM, \
                 --enable-auto-tool-choice --tool-call-parser. See the README, section \"Local models\"."
            );
            observer.event(Event::Warning(&text))?;
        }
        Ok(reply)
    }
}
// ANCHOR_END: text_calls

// ANCHOR: text_tool_call
/// The name of the offered tool that `text` calls, when the whole text is such a call:
/// bare JSON, fenced in ```` ``` ```` / ```` ```json ````, or in `<tool_call>` tags; an object
/// (`{"name"…}` or `{"function": {"name"…}}`) or a list of them.
pub(crate) fn text_tool_call(text: &str, tools: &[Value]) -> Option<String> {
    let mut body = text.trim();
    if let Some(fenced) = body.strip_prefix("```") {
        // The info string (`json`) runs to the end of the first line.
        body = fenced.split_once('\n')?.1.trim_end().strip_suffix("```")?.trim();
    }
    if let Some(tagged) = body.strip_prefix("<tool_call>") {
        body = tagged.trim_end().strip_suffix("</tool_call>").unwrap_or(tagged).trim();
    }
    if !body.starts_with(['{', '[']) {
        return None;
    }
    let value: Value = serde_json::from_str(body).ok()?;
    let first = match &value {
        Value::Array(items) => items.first()?,
        object => object,
    };
    let name = first
        .get("name")
        .or_else(|| first.get("function").and_then(|f| f.get("name")))
        .and_then(Value::as_str)?;
    let mut offered = tools.iter().filter_map(|tool| tool.pointer("/function/name").and_then(Value::as_str));
    offered.any(|tool| tool == name).then(|| name.to_owned())
}
// ANCHOR_END: text_tool_call

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<Value> {
        ["read_file", "bash"].iter().map(|n| json!({"type": "function", "function": {"name": n}})).collect()
    }

    #[test]
    fn bare_fenced_tagged_and_listed_calls_are_recognised() {
        for text in [
            r#"{"name": "bash", "arguments": {"command": "ls"}}"#,
            "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```",
            "```\n{\"function\": {\"name\": \"bash\"}}\n```\n",
            "<tool_call>\n{\"name\": \"bash\", \"arguments\": {}}\n</tool_call>",
            r#"[{"name": "bash", "arguments": {}}]"#,
        ] {
            assert_eq!(text_tool_call(text, &tools()).as_deref(), Some("bash"), "{text}");
        }
    }

    #[test]
    fn prose_json_data_and_unknown_tools_are_answers() {
        for text in [
            "Run `ls` to see the files.",
            r#"{"name": "Ada", "age": 36}"#,
            r#"{"name": "write_file", "arguments": {}}"#,
            "Here it is:\n```json\n{\"name\": \"bash\"}\n```",
            "{not json",
        ] {
            assert_eq!(text_tool_call(text, &tools()), None, "{text}");
        }
    }
}
