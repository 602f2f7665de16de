//! Chapter 11's text as the person sees it: the pieces of a reply and the text of a stream
//! cut off are notices (chapter 2's extension point); a piece that may end inside a key waits
//! for the next (chapter 3's redaction); and the terminal of chapter 4 draws the pieces as
//! they arrive.

use crate::ch02_loop::{Error, Event, Notice, Observer, Reply};
use crate::ch03_tools::secrets::{RedactingStream, Redactor};
use crate::ch04_terminal::{Look, Screen, StreamRenderer, TerminalObserver};
use crate::ch05_sessions::Body;
use crate::text::plural;
use serde_json::{Value, json};
use std::any::Any;

// ANCHOR: notices
/// A piece of the reply's text, as it arrives. Drawn, not recorded: the reply is.
#[derive(Clone, Debug)]
pub struct StreamedText(pub String);

impl Notice for StreamedText {
    fn cleaned(&self, clean: &dyn Fn(&str) -> String) -> Box<dyn Notice> {
        Box::new(StreamedText(clean(&self.0)))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The text of a stream cut off before it finished: shown, and recorded as `partial`, never
/// sent back to the model.
#[derive(Clone, Debug)]
pub struct PartialText(pub String);

impl Notice for PartialText {
    fn line(&self, _: Option<usize>) -> Option<String> {
        Some(format!("partial: {}", self.0))
    }

    fn records(&self) -> Vec<Value> {
        vec![json!(Body::Partial { content: self.0.clone() })]
    }

    /// `--json` keeps one `notice` type, with a kind, for warnings and partial text alike.
    fn json(&self) -> Option<Value> {
        Some(json!({"type": "notice", "kind": "partial", "text": self.0}))
    }

    fn cleaned(&self, clean: &dyn Fn(&str) -> String) -> Box<dyn Notice> {
        Box::new(PartialText(clean(&self.0)))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
// ANCHOR_END: notices

// ANCHOR: held_back
/// The observer of one streamed reply: its text passes on as it arrives, except a piece that
/// may end inside a key, which waits for the next to say (chapter 3's `RedactingStream`). A key
/// the server echoes is redacted before it is on the screen, even cut in two.
pub(crate) struct HeldBack<'a> {
    inner: &'a mut dyn Observer,
    text: RedactingStream,
}

impl<'a> HeldBack<'a> {
    pub(crate) fn new(inner: &'a mut dyn Observer, redactor: &Redactor) -> HeldBack<'a> {
        HeldBack { inner, text: redactor.stream() }
    }

    /// The stream has ended: what was held back can be shown.
    pub(crate) fn flush(mut self) -> Result<(), Error> {
        let rest = self.text.finish();
        if rest.is_empty() {
            return Ok(());
        }
        self.inner.event(Event::Notice(&StreamedText(String::from_utf8_lossy(&rest).into_owned())))
    }
}

impl Observer for HeldBack<'_> {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        if let Event::Notice(notice) = event
            && let Some(StreamedText(text)) = notice.as_any().downcast_ref()
        {
            let ready = self.text.push(text.as_bytes());
            if ready.is_empty() {
                return Ok(());
            }
            // Lossless: only whole keys (valid UTF-8) are ever held back or replaced.
            let ready = String::from_utf8_lossy(&ready).into_owned();
            return self.inner.event(Event::Notice(&StreamedText(ready)));
        }
        self.inner.event(event)
    }

    fn queued_input(&mut self) -> Vec<String> {
        self.inner.queued_input()
    }
}
// ANCHOR_END: held_back

// ANCHOR: live_text
/// Chapter 4's terminal with the reply drawn as it arrives: as the model wrote it on a pipe, a
/// complete line at a time on a terminal (its `StreamRenderer`). The spinner runs until the
/// first line; the reply, once complete, is not drawn again.
pub struct LiveText<'a> {
    terminal: &'a mut TerminalObserver,
    screen: Screen,
    /// The last character drawn, once the reply's text has begun.
    streamed: Option<char>,
    /// The reply on a terminal, rendered a line at a time.
    stream: Option<StreamRenderer>,
}

impl<'a> LiveText<'a> {
    pub fn new(terminal: &'a mut TerminalObserver) -> LiveText<'a> {
        let screen = terminal.screen().clone();
        LiveText { terminal, screen, streamed: None, stream: None }
    }

    fn draw(&mut self, text: &str) {
        if self.screen.look == Look::Raw {
            self.terminal.stop_spinner();
            self.screen.print(text);
            self.streamed = text.chars().last().or(self.streamed);
            return;
        }
        let look = self.screen.look;
        let lines = self.stream.get_or_insert_with(|| StreamRenderer::new(look)).push(text);
        if !lines.is_empty() {
            self.terminal.stop_spinner();
            self.screen.print(&lines);
        }
        self.streamed = Some('\n');
    }
}

// ANCHOR_END: live_text

// ANCHOR: live_text_events
impl Observer for LiveText<'_> {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        match event {
            Event::Request { .. } => (self.streamed, self.stream) = (None, None),
            Event::Notice(notice) => {
                if let Some(StreamedText(text)) = notice.as_any().downcast_ref() {
                    self.draw(text);
                    return Ok(());
                }
                // A stream cut off: what arrived is on the screen (on stdout), so it is not
                // printed again, only said to be incomplete. (A reply cut at the size cap is
                // megabytes.)
                if let Some(PartialText(text)) = notice.as_any().downcast_ref()
                    && self.streamed.is_some()
                {
                    if let Some(mut stream) = self.stream.take() {
                        self.screen.print(&stream.finish());
                    } else if self.streamed != Some('\n') {
                        self.screen.print("\n");
                    }
                    self.streamed = Some('\n');
                    return self.terminal.event(Event::Notice(&CutShown(text.chars().count())));
                }
            }
            Event::Reply(reply) if self.streamed.is_some() => {
                // The terminal stops waiting; the text is on the screen already.
                self.terminal.event(Event::Reply(&Reply { content: None, ..reply.clone() }))?;
                if let Some(mut stream) = self.stream.take() {
                    self.screen.print(&stream.finish());
                }
                if self.streamed != Some('\n') {
                    self.screen.print("\n");
                }
                return Ok(());
            }
            _ => {}
        }
        self.terminal.event(event)
    }

    fn queued_input(&mut self) -> Vec<String> {
        self.terminal.queued_input()
    }
}
// ANCHOR_END: live_text_events

/// What the screen says of a cut stream whose text it has shown: its size, not the text again.
#[derive(Debug)]
struct CutShown(usize);

impl Notice for CutShown {
    fn line(&self, _: Option<usize>) -> Option<String> {
        let size = plural(self.0, "character");
        Some(format!("partial: the reply above was cut off after {size}; it is not an answer"))
    }

    fn cleaned(&self, _: &dyn Fn(&str) -> String) -> Box<dyn Notice> {
        Box::new(CutShown(self.0))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
