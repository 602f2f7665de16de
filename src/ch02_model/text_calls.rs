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
//! parses as a call to one of the tools offered, the turn fails: nothing was done, so it is not
//! a finished task, and `-p` must not exit 0 as if it were. The error says what is true, which
//! depends on how the call was written. In the `<tool_call>` tags of the model's chat template,
//! the model did its part and the server did not parse it (the template or the server's
//! flags). As plain JSON, the model did not write its template's format at all: either the
//! template has no tool support, or the model is too small to follow it (Qwen2.5-Coder 0.5B
//! with llama.cpp's `--jinja` wrote calls as fenced JSON in 5 runs of 5). The call is not run:
//! text is not a tool call, and guessing what a model meant is how an agent does what nobody
//! asked.

use crate::ch02_loop::{Error, Model, Observer, Reply, Request};
use serde_json::Value;

// ANCHOR: text_calls
/// A model whose final answers are checked for tool calls written as text.
pub struct TextCallCheck<M> {
    pub inner: M,
}

impl<M: Model> Model for TextCallCheck<M> {
    fn complete(&mut self, request: &Request, observer: &mut dyn Observer) -> Result<Reply, Error> {
        let reply = self.inner.complete(request, observer)?;
        let answer = reply.content.as_deref().filter(|_| reply.tool_calls.is_empty());
        match answer.and_then(|text| text_tool_call(text, request.tools)) {
            Some(call) => Err(Error::Model(written_as_text(&call))),
            None => Ok(reply),
        }
    }
}

/// What is true of a call written as text, and what to do about it.
pub(crate) fn written_as_text(call: &TextCall) -> String {
    let name = &call.name;
    let cause = match call.tagged {
        true => {
            "in its chat template's <tool_call> tags, and the server left it as text: for \
                 llama.cpp, start llama-server with --jinja and a chat template that supports tools; \
                 for vLLM, add --enable-auto-tool-choice and the --tool-call-parser of the model"
        }
        false => {
            "as plain JSON, not in its chat template's tool-call format, which is what the \
                  server turns into tool calls. Either the template has no tool support (llama-server \
                  needs --jinja; vLLM --enable-auto-tool-choice --tool-call-parser), or the model is \
                  too small to write that format (common under ~3B parameters): use a larger model"
        }
    };
    format!(
        "the model's answer is a call to {name} written as text, so nothing ran and the task is not \
         done. It wrote the call {cause}. See the README, section \"Local models\"."
    )
}
// ANCHOR_END: text_calls

// ANCHOR: text_tool_call
/// A call to an offered tool, written as text; `tagged` when in `<tool_call>` tags.
pub(crate) struct TextCall {
    pub name: String,
    pub tagged: bool,
}

/// The call to an offered tool that `text` is, when the whole text is such a call: bare JSON,
/// fenced in ```` ``` ```` / ```` ```json ````, or in `<tool_call>` tags; an object
/// (`{"name"…}` or `{"function": {"name"…}}`) or a list of them.
pub(crate) fn text_tool_call(text: &str, tools: &[Value]) -> Option<TextCall> {
    let mut body = text.trim();
    if let Some(fenced) = body.strip_prefix("```") {
        // The info string (`json`) runs to the end of the first line.
        body = fenced.split_once('\n')?.1.trim_end().strip_suffix("```")?.trim();
    }
    let tagged = body.starts_with("<tool_call>");
    if let Some(inside) = body.strip_prefix("<tool_call>") {
        body = inside.trim_end().strip_suffix("</tool_call>").unwrap_or(inside).trim();
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
    offered.any(|tool| tool == name).then(|| TextCall { name: name.to_owned(), tagged })
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
            let call = text_tool_call(text, &tools()).expect(text);
            assert_eq!(
                (call.name.as_str(), call.tagged),
                ("bash", text.starts_with("<tool_call>")),
                "{text}"
            );
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
            assert!(text_tool_call(text, &tools()).is_none(), "{text}");
        }
    }
}
