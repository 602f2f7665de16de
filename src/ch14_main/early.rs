//! The command line before chapter 4 gives it a terminal: one line on stderr per tool call
//! (with `-v`, the first line of its result too), and no signals of its own: SIGTERM and SIGHUP
//! end the process at once.

use mini_agent::ch02_loop::{Error, Event, Observer, describe_call};

/// Progress on stderr, so that stdout holds the answer alone.
pub struct Progress {
    pub verbose: bool,
}

impl Observer for Progress {
    fn event(&mut self, event: Event) -> Result<(), Error> {
        match event {
            Event::ToolStarted(call) => eprintln!("→ {}", describe_call(call)),
            Event::ToolFinished(_, output) if self.verbose => {
                let first = output.content.lines().next().unwrap_or_default();
                eprintln!("  {first}");
            }
            _ => {}
        }
        Ok(())
    }
}
