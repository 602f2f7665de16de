//! Tests of the command-line parser.

use super::*;

fn parse_words(words: &[&str]) -> Result<Command, String> {
    parse(&words.iter().map(|w| w.to_string()).collect::<Vec<_>>())
}

fn agent(words: &[&str]) -> Options {
    match parse_words(words) {
        Ok(Command::Agent(options)) => options,
        other => panic!("expected agent options for {words:?}, got {other:?}"),
    }
}

fn error(words: &[&str]) -> String {
    match parse_words(words) {
        Err(message) => message,
        other => panic!("expected an error for {words:?}, got {other:?}"),
    }
}

#[test]
fn no_words_means_the_interactive_defaults() {
    assert_eq!(agent(&[]), Options::default());
    assert_eq!(Options::default().max_turns, 50);
}

#[test]
fn every_flag_lands_in_its_field() {
    let options = agent(&[
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
    assert_eq!(
        options,
        Options {
            prompt: Some(Prompt::Text("do it".into())),
            verbose: true,
            max_turns: 7,
            model: Some("m1".into()),
            base_url: Some("http://127.0.0.1:1/v1".into()),
            ..Options::default()
        }
    );
    assert!(agent(&["--demo"]).demo);
    assert_eq!(agent(&["--root", "/tmp/x"]).root, Some(PathBuf::from("/tmp/x")));
}

#[cfg(feature = "ch10")]
#[test]
fn the_session_flags_of_chapter_10() {
    let session = agent(&["-r", "2026", "--status", "--acknowledge-unknown"]);
    assert_eq!(session.resume.as_deref(), Some("2026"));
    assert!(session.status && session.acknowledge_unknown);
    assert!(agent(&["--continue"]).continue_latest);
    assert!(agent(&["-vc"]).continue_latest);
    assert!(error(&["-c", "-r", "x"]).contains("not both"));
    assert!(error(&["-cr", "2026"]).contains("not both"));
    assert!(error(&["--status"]).contains("add -c"));
    assert!(error(&["-r", " "]).contains("empty"));
}

#[cfg(feature = "ch11")]
#[test]
fn streaming_is_a_flag_from_chapter_11() {
    assert!(agent(&["--stream"]).stream);
}

#[cfg(feature = "ch12")]
#[test]
fn the_permission_flags_of_chapter_12() {
    let options = agent(&["--allow-write", "--allow-shell"]);
    assert!(options.allow_write && options.allow_shell);
    assert_eq!(error(&["--alow-write"]), "unknown flag --alow-write — did you mean --allow-write?");
}

#[cfg(feature = "ch14")]
#[test]
fn json_is_a_flag_from_chapter_14() {
    assert!(agent(&["--json", "-p", "x"]).json);
    assert!(error(&["--json"]).contains("add -p"));
}

/// Chapter 18's switches, and their hint.
#[cfg(feature = "ch18")]
#[test]
fn the_mcp_switches_land_in_their_fields() {
    let options = agent(&["--trust-mcp", "--allow-mcp"]);
    assert_eq!(error(&["--allow-mcp=no"]), "--allow-mcp takes no value");
    assert!(options.mcp.trust && options.mcp.allow);
    assert!(!agent(&[]).mcp.trust && !agent(&[]).mcp.allow);
    assert_eq!(error(&["--trust-mpc"]), "unknown flag --trust-mpc — did you mean --trust-mcp?");
}

#[test]
fn values_can_be_attached_with_an_equals_sign() {
    let options = agent(&["--prompt=a=b", "--model=x", "--max-turns=3"]);
    assert_eq!(options.prompt, Some(Prompt::Text("a=b".into())));
    assert_eq!(options.model.as_deref(), Some("x"));
    assert_eq!(options.max_turns, 3);
}

#[test]
fn a_dash_prompt_means_stdin_and_a_prompt_may_start_with_one_dash() {
    assert_eq!(agent(&["-p", "-"]).prompt, Some(Prompt::Stdin));
    assert_eq!(agent(&["-p", "-x is odd"]).prompt, Some(Prompt::Text("-x is odd".into())));
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

#[cfg(feature = "ch13")]
#[test]
fn eval_flags_get_the_nearest_known_one_too() {
    assert_eq!(error(&["eval", "--repeat", "2"]), "unknown flag --repeat — did you mean --repeats?");
    assert_eq!(parse_words(&["eval", "-h"]), Ok(Command::Help));
}

#[test]
fn mistakes_say_how_to_fix_them() {
    assert_eq!(error(&["-p"]), "-p needs a value");
    assert_eq!(
        error(&["-p", "--allow-write"]),
        "-p needs a value, but the next word is the flag --allow-write"
    );
    assert_eq!(error(&["--demo=yes"]), "--demo takes no value");
    assert!(error(&["fix the bug"]).contains("mini-agent -p \"fix the bug\""));
    assert!(error(&["--demo", "--base-url", "http://x"]).contains("drop --base-url"));
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
    let options = agent(&["-vp", "do it"]);
    assert!(options.verbose);
    assert_eq!(options.prompt, Some(Prompt::Text("do it".into())));
    assert!(error(&["-pv", "x"]).starts_with("-p takes a value, so it must come last in -pv"));
    assert!(error(&["-vx"]).starts_with("unknown flag -x in -vx: one-letter flags combine"));
    assert_eq!(agent(&["-p", "-vx is odd"]).prompt, Some(Prompt::Text("-vx is odd".into())));
}

#[test]
fn help_and_version_win_wherever_they_appear() {
    assert_eq!(parse_words(&["-p", "x", "--help"]), Ok(Command::Help));
    assert_eq!(parse_words(&["-V"]), Ok(Command::Version));
    let text = help();
    for must in ["--demo", "OPENAI_API_KEY", "EXIT CODES", "-p -"] {
        assert!(text.contains(must), "help lacks {must}");
    }
}

#[cfg(feature = "ch13")]
#[test]
fn eval_takes_a_directory_and_repeats() {
    assert_eq!(
        parse_words(&["eval", "scenarios", "--repeats", "3"]),
        Ok(Command::Eval(EvalOptions { dir: Some("scenarios".into()), repeats: 3, verbose: false }))
    );
    assert_eq!(
        parse_words(&["eval"]),
        Ok(Command::Eval(EvalOptions { dir: None, repeats: 1, verbose: false }))
    );
    assert!(error(&["eval", "a", "b"]).contains("second"));
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
    for a in odd {
        for b in odd {
            let _ = parse_words(&[a, b]);
            let _ = parse_words(&["eval", a, b]);
            let _ = parse_words(&[a, "-p", b]);
        }
    }
    assert_eq!(edit_distance("", ""), 0);
    assert_eq!(edit_distance("kitten", "sitting"), 3);
}

#[cfg(feature = "ch16")]
#[test]
fn trust_hooks_is_a_switch_and_its_misspelling_is_caught() {
    assert!(agent(&["--trust-hooks", "-p", "x"]).trust_hooks);
    assert!(!agent(&["-p", "x"]).trust_hooks);
    assert_eq!(error(&["--trust-hook"]), "unknown flag --trust-hook — did you mean --trust-hooks?");
    assert!(help().contains("--trust-hooks"));
}

#[cfg(feature = "ch19")]
#[test]
fn api_names_one_of_the_two_wire_formats() {
    assert_eq!(agent(&["--api", "anthropic"]).api.as_deref(), Some("anthropic"));
    assert_eq!(agent(&["--api=openai"]).api.as_deref(), Some("openai"));
    assert_eq!(error(&["--api", "gemini"]), r#"--api must be openai or anthropic, got "gemini""#);
    assert!(error(&["--api", "openai", "--api", "anthropic"]).contains("given twice"));
}
