//! Tests of the command-line parser: against this state's table for chapter 2's flags (every
//! state has them), and against a table made up here for what later chapters register, so the
//! tests do not depend on the chapter state they run in.

use super::*;
use crate::ch14_main::registry::{Registry, chapters};
use mini_agent::ch02_loop::command_line::{
    BASE_URL, DEMO, Help, MAX_TURNS, MODEL, PROMPT, ROOT, Registry as _, VERBOSE,
};

fn words(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| word.to_string()).collect()
}

fn agent_in(registry: &Registry, given: &[&str]) -> Settings {
    match parse(&words(given), registry) {
        Ok(Command::Agent(settings)) => settings,
        other => panic!("expected agent settings for {given:?}, got {other:?}"),
    }
}

fn error_in(registry: &Registry, given: &[&str]) -> String {
    match parse(&words(given), registry) {
        Err(message) => message,
        other => panic!("expected an error for {given:?}, got {other:?}"),
    }
}

fn agent(given: &[&str]) -> Settings {
    agent_in(&chapters(), given)
}

fn error(given: &[&str]) -> String {
    error_in(&chapters(), given)
}

const CONTINUE: Flag = Flag::switch(5, "--continue", &["continue"]).short('c');
const RESUME: Flag = Flag::value(5, "--resume", Takes::NonEmpty("ID"), &["resume"]).short('r');
const API: Flag = Flag::value(19, "--api", Takes::OneOf("NAME", &["openai", "anthropic"]), &["api"]);
const REPEATS: Flag = Flag::value(13, "--repeats", Takes::Count("N", 10), &["repeats"]).of("eval");

/// Chapter 2's table with flags like later chapters': a short switch, a short value, a choice,
/// a subcommand, and a rule about two flags together.
fn later() -> Registry {
    let mut registry = Registry::default();
    mini_agent::ch02_loop::command_line::register(&mut registry);
    let tasks = Flag { chapter: 15, command: "tasks", ..SHOW_HELP };
    let sessions = Flag { chapter: 14, command: "sessions", ..SHOW_HELP };
    for flag in [CONTINUE, RESUME, API, REPEATS, tasks, sessions] {
        registry.flag(flag);
    }
    registry.help(Help { chapter: 5, page: "", section: "SESSIONS", lines: &["  sessions"] });
    registry.check(|settings| match settings.has(&CONTINUE) && settings.has(&RESUME) {
        true => Err("use either -c/--continue or -r/--resume, not both".into()),
        false => Ok(()),
    });
    registry
}

#[test]
fn no_words_means_the_interactive_defaults() {
    assert_eq!(agent(&[]), Settings::default());
}

#[test]
fn every_flag_lands_in_the_settings() {
    let settings = agent(&[
        "-p",
        "do it",
        "-v",
        "--max-turns",
        "7",
        "--model",
        "m1",
        "--base-url",
        "http://127.0.0.1:1/v1",
    ]);
    assert_eq!(settings.value(&PROMPT), Some("do it"));
    assert!(settings.has(&VERBOSE));
    assert_eq!(settings.count(&MAX_TURNS), Some(7));
    assert_eq!(settings.value(&MODEL), Some("m1"));
    assert_eq!(settings.value(&BASE_URL), Some("http://127.0.0.1:1/v1"));
    assert!(!settings.has(&DEMO));
    assert!(agent(&["--demo"]).has(&DEMO));
    assert_eq!(agent(&["--root", "/tmp/x"]).value(&ROOT), Some("/tmp/x"));
}

#[test]
fn a_later_chapters_flags_parse_from_its_table_and_only_there() {
    let later = later();
    let session = agent_in(&later, &["-r", "2026", "-v"]);
    assert_eq!(session.value(&RESUME), Some("2026"));
    assert!(agent_in(&later, &["-vc"]).has(&CONTINUE));
    assert!(error_in(&later, &["-c", "-r", "x"]).contains("not both"));
    assert!(error_in(&later, &["-cr", "2026"]).contains("not both"));
    assert!(error_in(&later, &["-r", " "]).contains("empty"));
    assert_eq!(error_in(&later, &["--continue=yes"]), "--continue takes no value");
    assert_eq!(error_in(&later, &["--contineu"]), "unknown flag --contineu — did you mean --continue?");
    // Chapter 2's table alone does not know them: a state names only what it has.
    let mut chapter_2 = Registry::default();
    mini_agent::ch02_loop::command_line::register(&mut chapter_2);
    assert_eq!(error_in(&chapter_2, &["--contineu"]), "unknown flag --contineu — see mini-agent --help");
    let rule = error_in(&chapter_2, &["-vx"]);
    assert!(
        rule.starts_with(
            "unknown flag -x in -vx: one-letter flags combine from -p -v -h -V, a value-taking one (-p) last"
        ),
        "{rule}"
    );
}

#[test]
fn a_choice_names_its_words() {
    let later = later();
    assert_eq!(agent_in(&later, &["--api", "anthropic"]).value(&API), Some("anthropic"));
    assert_eq!(agent_in(&later, &["--api=openai"]).value(&API), Some("openai"));
    assert_eq!(error_in(&later, &["--api", "gemini"]), r#"--api must be openai or anthropic, got "gemini""#);
    assert!(error_in(&later, &["--api", "openai", "--api", "anthropic"]).contains("given twice"));
}

#[test]
fn a_subcommand_has_its_own_words() {
    let later = later();
    assert_eq!(
        parse(&words(&["eval", "x", "--repeats", "3"]), &later),
        Ok(Command::Sub("eval", words(&["x", "--repeats", "3"])))
    );
    let mut dir = Vec::new();
    let parsed = parse_flags(&words(&["x", "--repeats", "3"]), "eval", &later, |stray| {
        dir.push(stray.word.to_string());
        Ok(())
    });
    let Ok(Parsed::Settings(settings)) = parsed else { panic!("{parsed:?}") };
    assert_eq!((dir, settings.count(&REPEATS)), (vec!["x".to_string()], Some(3)));
    let typo = parse_flags(&words(&["--repeat", "2"]), "eval", &later, |_| Ok(()));
    assert_eq!(typo, Err("unknown flag --repeat — did you mean --repeats?".into()));
    assert!(parse_flags(&words(&["--repeats", "11"]), "eval", &later, |_| Ok(())).is_err());
}

#[test]
fn values_can_be_attached_with_an_equals_sign() {
    let settings = agent(&["--prompt=a=b", "--model=x", "--max-turns=3"]);
    assert_eq!(settings.value(&PROMPT), Some("a=b"));
    assert_eq!(settings.value(&MODEL), Some("x"));
    assert_eq!(settings.count(&MAX_TURNS), Some(3));
}

#[test]
fn a_dash_prompt_means_stdin_and_a_prompt_may_start_with_one_dash() {
    assert_eq!(agent(&["-p", "-"]).value(&PROMPT), Some("-"));
    assert_eq!(agent(&["-p", "-x is odd"]).value(&PROMPT), Some("-x is odd"));
}

#[test]
fn max_turns_must_be_a_positive_number() {
    for bad in ["0", "-1", "ten", "", "99999999999999999999999"] {
        assert!(error(&["--max-turns", bad]).contains("--max-turns expects a whole number"), "{bad}");
    }
}

#[test]
fn unknown_flags_get_the_nearest_known_one() {
    assert_eq!(error(&["--max-turn", "3"]), "unknown flag --max-turn — did you mean --max-turns?");
    assert_eq!(error(&["-demo"]), "unknown flag -demo — did you mean --demo?");
    assert_eq!(error(&["--frobnicate"]), "unknown flag --frobnicate — see mini-agent --help");
}

#[test]
fn mistakes_say_how_to_fix_them() {
    assert_eq!(error(&["-p"]), "-p needs a value");
    assert_eq!(error(&["-p", "--verbose"]), "-p needs a value, but the next word is the flag --verbose");
    assert_eq!(error(&["--demo=yes"]), "--demo takes no value");
    assert!(error(&["fix the bug"]).contains("mini-agent -p \"fix the bug\""));
    assert!(error(&["--demo", "--base-url", "http://x"]).contains("drop --base-url"));
}

#[test]
fn an_unquoted_task_gets_the_whole_command_quoted() {
    let quote = "quote the whole value: mini-agent";
    assert_eq!(
        error(&["--demo", "-p", "list", "files"]),
        format!("unexpected argument 'files' after -p's value — {quote} --demo -p \"list files\"")
    );
    // The run of words ends at the next flag; a group (-vp) and an inline value (--prompt=) too.
    assert!(error(&["-p", "fix", "the", "bug", "--demo"]).ends_with(" -p \"fix the bug\" --demo"));
    assert!(error(&["-vp", "fix", "it"]).ends_with(": mini-agent -vp \"fix it\""));
    assert!(error(&["--prompt=fix", "it"]).ends_with(": mini-agent \"--prompt=fix it\""));
    // Words with shell characters come back quoted so that the shell reads them as typed.
    assert!(error(&["-p", "say", "\"$HOME\""]).ends_with(r#"-p "say \"\$HOME\"""#));
    // Plain words with no -p: the same words as the task, where they were.
    assert_eq!(
        error(&["--demo", "list", "files"]),
        "unexpected argument 'list' — to run one task, write: mini-agent --demo -p \"list files\""
    );
    // -p elsewhere: there is no second task to make; say what to do instead.
    assert!(error(&["-p", "x", "--demo", "more"]).contains("put the whole task in one quoted -p value"));
    // An escape sequence in a word is not sent to the terminal.
    assert!(!error(&["-p", "a", "\u{1b}[2J"]).contains('\u{1b}'));
}

#[test]
fn a_first_word_close_to_a_command_gets_it_and_the_task_reading() {
    let later = later();
    assert_eq!(
        error_in(&later, &["task", "list"]),
        "unknown command 'task' — did you mean: mini-agent tasks list? \
         (to run one task, write: mini-agent -p \"task list\")"
    );
    assert!(
        error_in(&later, &["session"])
            .starts_with("unknown command 'session' — did you mean: mini-agent sessions?")
    );
    assert!(error_in(&later, &["help"]).contains("did you mean: mini-agent --help?"));
    assert!(error_in(&later, &["hlep"]).contains("did you mean: mini-agent --help?"));
    assert!(error_in(&later, &["version"]).contains("did you mean: mini-agent --version?"));
    assert!(error_in(&later, &["demo", "-p", "x"]).contains("did you mean: mini-agent --demo -p x?"));
    assert!(error_in(&later, &["evl", "scenarios"]).contains("mini-agent eval scenarios?"));
    // A word that is no near miss is a task, and only the first word names a command.
    assert!(error_in(&later, &["fix", "it"]).starts_with("unexpected argument 'fix' — to run one task"));
    assert!(error_in(&later, &["--demo", "tasks"]).starts_with("unexpected argument 'tasks'"));
    assert_eq!(slips::typo_distance("hlep", "help"), 1);
    assert_eq!(slips::typo_distance("test", "tasks"), 3);
}

#[test]
fn a_value_given_twice_or_empty_is_an_error() {
    assert_eq!(error(&["-p", "a", "-p", "b"]), "--prompt was given twice; give it once");
    assert_eq!(error(&["--model", "a", "--model=b"]), "--model was given twice; give it once");
    assert_eq!(error(&["--model", ""]), "--model needs a value, and '' is empty");
    assert!(error(&["--base-url="]).contains("empty"));
}

#[test]
fn short_flags_combine_with_a_value_taking_one_last() {
    let settings = agent(&["-vp", "do it"]);
    assert!(settings.has(&VERBOSE));
    assert_eq!(settings.value(&PROMPT), Some("do it"));
    assert!(error(&["-pv", "x"]).starts_with("-p takes a value, so it must come last in -pv"));
    assert_eq!(agent(&["-p", "-vx is odd"]).value(&PROMPT), Some("-vx is odd"));
}

#[test]
fn help_and_version_win_wherever_they_appear() {
    assert_eq!(parse(&words(&["-p", "x", "--help"]), &chapters()), Ok(Command::Help));
    assert_eq!(parse(&words(&["-V"]), &chapters()), Ok(Command::Version));
}

#[test]
fn help_lists_what_the_table_holds_in_its_sections() {
    let text = super::super::help::help(&later(), "");
    for must in
        ["--demo", "OPENAI_API_KEY", "EXIT CODES", "-p -", "-r, --resume ID", "--api NAME", "SESSIONS"]
    {
        assert!(text.contains(must), "help lacks {must}:\n{text}");
    }
    let full = super::super::help::help(&chapters(), "");
    assert!(!full.contains("{version}") && !full.contains("{max_turns}"), "every placeholder is filled");
    let sections: Vec<&str> =
        text.lines().filter(|line| !line.starts_with(' ') && line.ends_with(char::is_uppercase)).collect();
    assert_eq!(sections.last(), Some(&"EXIT CODES"), "{sections:?}");
}

#[test]
fn odd_inputs_never_panic() {
    let odd = [
        "",
        "-",
        "--",
        "---",
        "=",
        "--=",
        "--=x",
        "-p=",
        "--prompt=",
        "--max-turns=",
        "é",
        "--ümlaut",
        "-pé",
        "\u{0}",
        "--root",
        "eval",
        "--model=",
        "-vV",
        "--acknowledge-unknown=1",
        "💥",
    ];
    let registries = [chapters(), later()];
    for registry in &registries {
        for a in odd {
            for b in odd {
                let _ = parse(&words(&[a, b]), registry);
                let _ = parse(&words(&["eval", a, b]), registry);
                let _ = parse(&words(&[a, "-p", b]), registry);
                let _ = parse_flags(&words(&[a, b]), "eval", registry, |_| Ok(()));
            }
        }
    }
    assert_eq!(edit_distance("", ""), 0);
    assert_eq!(edit_distance("kitten", "sitting"), 3);
}
