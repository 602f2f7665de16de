//! The journal reader against hostile input: whatever bytes a session file holds, reading
//! it never panics, and the answer is either the records with at most a torn-tail warning,
//! or an error that names the file (and the line, when one line is to blame).
//!
//! The inputs are generated, reproducibly, with a xorshift generator: random bytes, every
//! truncated prefix of a valid journal (which cuts multi-byte characters in half too),
//! random byte flips in a valid journal, huge lines, deeply nested JSON and invalid UTF-8.
//! The library's reader is called directly — `read_journal` (what `--status` uses),
//! `Journal::open` (what resuming uses: it also cuts the torn tail) and `status_of`.

use crate::harness::TempDir;
use mini_agent::ch02_loop::{ToolCall, ToolStatus, Usage};
use mini_agent::ch05_sessions::{Append, Body, Record, SessionStore};
use mini_agent::ch09_journal::{Journal, Loaded, read_journal};
use mini_agent::ch10_recovery::status_of;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use mini_agent::random::XorShift;

/// A real journal, written by `Journal`, with every kind of record and multi-byte text.
fn valid_journal(dir: &Path) -> Vec<u8> {
    let store = SessionStore::new(dir);
    let mut journal = Journal::create(&store, "model-µ").expect("create a journal");
    let call = ToolCall {
        id: "call_1".into(),
        name: "bash".into(),
        arguments: r#"{"command":"echo 你好 > greeting.txt"}"#.into(),
    };
    let bodies = [
        Body::System { content: "You are mini-agent. Ünïcödé is fine.".into() },
        Body::User { content: "写一个文件 and say hi 👋".into() },
        Body::Assistant {
            content: Some("On it.".into()),
            tool_calls: vec![call.clone()],
            usage: Some(Usage { prompt_tokens: 100, completion_tokens: 12 }),
        },
        Body::ToolStarted { id: call.id.clone(), name: call.name.clone(), arguments: call.arguments.clone() },
        Body::ToolFinished { id: call.id.clone(), status: ToolStatus::Ok, content: "exit 0\n".into() },
        Body::Retry { attempt: 1, wait_ms: 500, reason: "HTTP 429".into() },
        Body::Usage { prompt_tokens: 120, completion_tokens: 7 },
        Body::Assistant {
            content: Some("Done: greeting.txt says 你好.".into()),
            tool_calls: vec![],
            usage: None,
        },
        Body::User { content: "line one\nline two \"quoted\" \\ back\tslash".into() },
        Body::Partial { content: "half an ans".into() },
        Body::Error { message: "model request failed: stream cut off".into() },
        Body::Interrupted {},
        Body::Compaction { summary: "Σ: the user wanted a greeting.".into(), replaces: 4, elided: 0 },
    ];
    for body in bodies {
        journal.append(body).expect("append");
    }
    std::fs::read(journal.path()).expect("read the journal back")
}

/// Reads `bytes` as a session file, catching a panic. `Ok(Err(message))` is a refusal.
fn read_bytes(path: &Path, bytes: &[u8]) -> Result<Result<Loaded, String>, String> {
    std::fs::write(path, bytes).expect("write the input");
    catch_unwind(AssertUnwindSafe(|| read_journal(path).map_err(|e| e.to_string())))
        .map_err(|_| format!("read_journal panicked on {} bytes: {:?}", bytes.len(), preview(bytes)))
}

fn preview(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(80)]).into_owned()
}

/// The properties every input must have. Returns what went wrong, if anything.
fn check(path: &Path, bytes: &[u8]) -> Option<String> {
    let outcome = match read_bytes(path, bytes) {
        Ok(outcome) => outcome,
        Err(panic) => return Some(panic),
    };
    // `--status` reads the same file: an answer or an error, never a panic.
    if catch_unwind(AssertUnwindSafe(|| status_of(path))).is_err() {
        return Some(format!("status_of panicked on {} bytes: {:?}", bytes.len(), preview(bytes)));
    }
    let name = path.display().to_string();
    match outcome {
        Ok(loaded) => {
            // Everything but a torn last line was read, and the lines read are records.
            let complete = bytes.split(|&b| b == b'\n').count() - 1;
            let torn = !bytes.is_empty() && !bytes.ends_with(b"\n");
            let expected = if loaded.warning.is_some() && !torn { complete - 1 } else { complete };
            if loaded.records.len() != expected {
                return Some(format!("{} records from {complete} complete lines", loaded.records.len()));
            }
            if torn && loaded.warning.is_none() {
                return Some("a last line without newline, and no warning".into());
            }
            if loaded.warning.as_ref().is_some_and(|w| !w.starts_with(&name) || !w.contains("cut off")) {
                return Some(format!("an unclear warning: {:?}", loaded.warning));
            }
            None
        }
        Err(message) if message.starts_with(&format!("{name}:")) && message.len() > name.len() + 10 => {
            // A line number, when there is one, points at a line that is really bad.
            let number = message[name.len() + 1..].split(':').next().and_then(|n| n.parse::<usize>().ok());
            match number {
                Some(number) => {
                    let line = bytes.split(|&b| b == b'\n').nth(number - 1).unwrap_or_default();
                    let parses = serde_json::from_slice::<Record>(line).is_ok();
                    // Line 1 may parse and still be refused: it must be a session header.
                    (parses && number != 1).then(|| {
                        format!("line {number} blamed but it parses: {message} ({:?})", preview(line))
                    })
                }
                // The one file-wide refusal: a header from a newer format version.
                None if message.contains("written by a newer mini-agent") => None,
                None => Some(format!("an error without a line: {message}")),
            }
        }
        Err(message) => Some(format!("an error that does not name the file: {message}")),
    }
}

/// `Journal::open`, waiting out a lock that is not ours to worry about: while another test
/// of this process spawns a child, the child holds copies of our descriptors (and with
/// them the previous iteration's lock) for the moment between its fork and its exec.
fn open_when_free(path: &Path) -> (Journal, Loaded) {
    let started = std::time::Instant::now();
    loop {
        match Journal::open(path) {
            Ok(opened) => return opened,
            Err(error) if error.to_string().contains("is in use") && started.elapsed().as_secs() < 60 => {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            Err(error) => panic!("a journal with a header opens: {error}"),
        }
    }
}

#[test]
fn every_truncated_prefix_of_a_journal_reads_as_its_complete_lines() {
    let temp = TempDir::new("selfcheck");
    let valid = valid_journal(temp.path());
    let path = temp.path().join(".mini_agent/sessions/prefix.jsonl");
    let line_ends: Vec<usize> =
        valid.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1).collect();
    let mut problems = Vec::new();
    for cut in 0..=valid.len() {
        let prefix = &valid[..cut];
        if let Some(problem) = check(&path, prefix) {
            problems.push(format!("prefix {cut}: {problem}"));
            continue;
        }
        let complete = line_ends.iter().filter(|&&end| end <= cut).count();
        let loaded = read_journal(&path).expect("checked above");
        assert_eq!(loaded.records.len(), complete, "prefix {cut}");
        assert_eq!(loaded.warning.is_some(), !line_ends.contains(&cut) && cut > 0, "prefix {cut}");
        // --status tells a session as soon as its header is complete, and never panics.
        let status = catch_unwind(AssertUnwindSafe(|| status_of(&path).map(|s| s.records)));
        match status {
            Ok(Ok(records)) => assert_eq!(records, complete, "prefix {cut}"),
            Ok(Err(error)) => {
                assert!(complete == 0 && error.to_string().contains("no session record"), "{error}")
            }
            Err(_) => problems.push(format!("prefix {cut}: status_of panicked")),
        }
        // Resuming cuts the torn tail off; the file is then exactly the complete lines.
        // (Every 7th prefix and those next to a line end: each cut is a sync_data.)
        let near_an_end = line_ends.iter().any(|&end| end.abs_diff(cut) <= 1);
        if complete > 0 && (cut % 7 == 0 || near_an_end) {
            let (_journal, opened) = open_when_free(&path);
            assert_eq!(opened.records.len(), complete);
            let kept = line_ends[complete - 1];
            assert_eq!(std::fs::read(&path).expect("read"), valid[..kept], "prefix {cut}");
        }
    }
    eprintln!(
        "journal reader: {} prefixes of a {}-byte journal, {} problems",
        valid.len() + 1,
        valid.len(),
        problems.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn random_bytes_and_random_damage_never_panic_and_always_explain() {
    let temp = TempDir::new("selfcheck");
    let valid = valid_journal(temp.path());
    let path = temp.path().join(".mini_agent/sessions/random.jsonl");
    let mut random = XorShift::new(0x9E37_79B9_7F4A_7C15);
    let mut problems = Vec::new();
    let mut inputs = 0;
    let (mut refused, mut torn) = (0, 0);
    let mut tally = |bytes: &[u8], problems: &mut Vec<String>, what: &str| {
        inputs += 1;
        if let Some(problem) = check(&path, bytes) {
            problems.push(format!("{what}: {problem}"));
        }
        match read_journal(&path) {
            Err(_) => refused += 1,
            Ok(loaded) if loaded.warning.is_some() => torn += 1,
            Ok(_) => {}
        }
    };
    // Random bytes, with and without newlines sprinkled in.
    for round in 0..400 {
        let length = random.below(600);
        let mut bytes = random.bytes(length);
        if round % 2 == 0 {
            for _ in 0..random.below(8) {
                let at = random.below(bytes.len());
                if let Some(byte) = bytes.get_mut(at) {
                    *byte = b'\n';
                }
            }
        }
        tally(&bytes, &mut problems, &format!("random round {round}"));
    }
    // A valid journal with a few bytes flipped, inserted or removed.
    for round in 0..600 {
        let mut bytes = valid.clone();
        for _ in 0..1 + random.below(3) {
            let at = random.below(bytes.len());
            match random.below(3) {
                0 => bytes[at] = random.next_u64() as u8,
                1 => bytes.insert(at, random.next_u64() as u8),
                _ => {
                    bytes.remove(at);
                }
            }
        }
        tally(&bytes, &mut problems, &format!("damage round {round}"));
    }
    // A random valid prefix followed by random garbage.
    for round in 0..200 {
        let mut bytes = valid[..random.below(valid.len())].to_vec();
        let garbage = random.below(64);
        bytes.extend(random.bytes(garbage));
        tally(&bytes, &mut problems, &format!("garbage tail round {round}"));
    }
    eprintln!(
        "journal reader: {inputs} random inputs: {refused} refused with an error, {torn} read with a torn-tail \
         warning, {} problems",
        problems.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn huge_lines_deep_nesting_and_invalid_utf8_are_told_not_crashed() {
    let temp = TempDir::new("selfcheck");
    let valid = valid_journal(temp.path());
    let path = temp.path().join(".mini_agent/sessions/hostile.jsonl");
    let header_end = valid.iter().position(|&b| b == b'\n').expect("a header line") + 1;
    let (header, rest) = valid.split_at(header_end);
    let name = path.display().to_string();
    let with_line = |line: &[u8], after: bool| -> Vec<u8> {
        let mut bytes = header.to_vec();
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
        if after {
            bytes.extend_from_slice(rest);
        }
        bytes
    };
    let huge_text = "x".repeat(16 << 20);
    let huge_record = format!(r#"{{"seq":2,"ts":"t","type":"user","content":"{huge_text}"}}"#);
    let deep = "[".repeat(100_000);
    let deep_in_a_record = format!(r#"{{"seq":2,"ts":"t","type":"user","content":{deep}"#);
    let invalid_utf8_in_a_string =
        b"{\"seq\":2,\"ts\":\"t\",\"type\":\"user\",\"content\":\"\xff\xfe\xc3\"}".to_vec();

    // A huge valid record reads; the same size of garbage is refused, naming line 2.
    let loaded =
        read_bytes(&path, &with_line(huge_record.as_bytes(), true)).expect("no panic").expect("reads");
    assert_eq!(loaded.records.len(), 2 + rest.iter().filter(|&&b| b == b'\n').count());
    assert!(loaded.warning.is_none(), "{:?}", loaded.warning);
    for (what, line) in [
        ("huge garbage", huge_text.as_bytes().to_vec()),
        ("deep nesting", deep.as_bytes().to_vec()),
        ("deep nesting in a record", deep_in_a_record.as_bytes().to_vec()),
        ("invalid UTF-8 in a string", invalid_utf8_in_a_string.clone()),
        ("invalid UTF-8 bytes", vec![0xc0, 0x80, 0xff, b'{', 0xed, 0xa0, 0x80]),
        ("a NUL line", vec![0; 4096]),
    ] {
        // In the middle: an error naming the file and line 2.
        let error = read_bytes(&path, &with_line(&line, true)).expect("no panic").err();
        let error = error.unwrap_or_else(|| panic!("{what} in the middle was accepted"));
        assert!(error.starts_with(&format!("{name}:2: corrupt session record")), "{what}: {error}");
        assert!(error.len() < 1000, "{what}: the message does not echo the input: {} bytes", error.len());
        // As the last line: a torn tail, read with a warning.
        let loaded =
            read_bytes(&path, &with_line(&line, false)).expect("no panic").expect("a torn tail reads");
        assert_eq!(loaded.records.len(), 1, "{what}");
        assert!(loaded.warning.is_some_and(|w| w.contains("line 2 was cut off")), "{what}");
        // As the first line: not a session file.
        let error = read_bytes(&path, &[&line[..], b"\n", rest].concat()).expect("no panic").err();
        assert!(error.is_some_and(|e| e.starts_with(&format!("{name}:1:"))), "{what} as line 1");
        // Without a newline anywhere: one torn line and nothing else.
        let loaded = read_bytes(&path, &line).expect("no panic").expect("a lone torn line reads");
        assert!(loaded.records.is_empty() && loaded.warning.is_some(), "{what} alone");
    }
}
