//! The service's turns, queues, approvals, slow clients and the console page, against the
//! double and the client of `tests/mod.rs`.

use super::*;

// ---- turns --------------------------------------------------------------------------------

#[test]
fn a_message_runs_a_turn_and_answers_with_its_end() {
    let (fake, _) = Fake::new();
    let server = server(&fake);
    let id = new_session(&server);
    let (status, body) =
        call(&server, "POST", &format!("/sessions/{id}/messages"), Some(json!({"message": "hello"})));
    assert_eq!((status, body), (200, json!({"answer": "hi", "code": 0, "error": null})));
    let (status, body) = call(&server, "GET", "/sessions", None);
    assert_eq!(status, 200);
    assert_eq!(
        body["sessions"][0],
        json!({"id": id, "turns": 1, "activity": "idle", "queued": 0, "approvals": 0})
    );
    let (_, session) = call(&server, "GET", &format!("/sessions/{id}"), None);
    assert_eq!(session["transcript"], json!([{"type": "user", "text": "hello"}]));
    assert!(session["last_event"].as_u64().unwrap() > 0);
}

#[test]
fn a_turn_that_cannot_start_is_answered_with_its_refusal_and_keeps_nothing() {
    let (fake, _) = Fake::new();
    let server = server(&fake);
    let id = new_session(&server);
    let path = format!("/sessions/{id}/messages");
    let why = format!("session {id} is open elsewhere");
    let (status, body) = call(&server, "POST", &path, Some(json!({"message": "held"})));
    assert_eq!((status, body), (409, json!({"error": why})));
    let (_, session) = call(&server, "GET", &format!("/sessions/{id}"), None);
    assert_eq!((&session["transcript"], &session["activity"]), (&json!([]), &json!("idle")));
    // A stream said 200 before the turn began: its `exit` event says why instead.
    let stream = format!("{path}/stream");
    let (status, _, body) = request(server.address(), "POST", &stream, Some(&json!({"message": "held"})), "");
    let exit = json!({"type": "exit", "code": 1, "error": why});
    let events: Vec<Value> = events(&body).into_iter().map(|(_, _, data)| data).collect();
    assert_eq!((status, events), (200, vec![exit]), "{body}");
    // The session is not spoiled: the next message runs.
    assert_eq!(call(&server, "POST", &path, Some(json!({"message": "hello"}))).0, 200);
}

#[test]
fn the_stream_sends_the_turns_events_as_numbered_sse_ending_with_exit() {
    let (fake, _) = Fake::new();
    let server = server(&fake);
    let id = new_session(&server);
    let path = format!("/sessions/{id}/messages/stream");
    let (status, head, body) =
        request(server.address(), "POST", &path, Some(&json!({"message": "tools 2"})), "");
    assert_eq!(status, 200);
    assert!(head.contains("Content-Type: text/event-stream"), "{head}");
    assert!(body.starts_with("retry: 2000\n\n"), "{body}");
    let events = events(&body);
    let types: Vec<&str> = events.iter().map(|(_, kind, _)| kind.as_str()).collect();
    assert_eq!(
        types,
        [
            "session",
            "request",
            "tool_started",
            "tool_finished",
            "tool_started",
            "tool_finished",
            "final",
            "exit"
        ]
    );
    let ids: Vec<u64> = events.iter().map(|(id, _, _)| id.unwrap()).collect();
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{ids:?}");
    for (_, kind, data) in &events {
        assert_eq!(data["type"], kind.as_str());
    }
    assert_eq!(events[0].2, json!({"type": "session", "id": id, "message": "tools 2"}));
    assert_eq!(events[6].2, json!({"type": "final", "answer": "done"}));
    assert_eq!(events[7].2, json!({"type": "exit", "code": 0, "error": null}));
}

#[test]
fn events_resume_after_last_event_id() {
    let (fake, _) = Fake::new();
    let server = server(&fake);
    let id = new_session(&server);
    let path = format!("/sessions/{id}/messages/stream");
    let (_, _, body) = request(server.address(), "POST", &path, Some(&json!({"message": "tools 1"})), "");
    let first = events(&body);
    let after = first[2].0.unwrap();
    let events_path = format!("/sessions/{id}/events");
    let (status, _, body) =
        request(server.address(), "GET", &events_path, None, &format!("Last-Event-ID: {after}\r\n"));
    assert_eq!(status, 200);
    let resumed = events(&body);
    assert_eq!(
        resumed.iter().map(|(id, ..)| *id).collect::<Vec<_>>(),
        first[3..].iter().map(|(id, ..)| *id).collect::<Vec<_>>()
    );
    // From the start, by query; and a number from an earlier run of the service reads as the start.
    let (_, _, body) = request(server.address(), "GET", &format!("{events_path}?after=0"), None, "");
    assert_eq!(events(&body).len(), first.len());
    let (_, _, body) = request(server.address(), "GET", &events_path, None, "Last-Event-ID: 999999\r\n");
    assert_eq!(events(&body).len(), first.len());
    let (status, _) = call(&server, "GET", &format!("{events_path}?after=x"), None);
    assert_eq!(status, 400);
}

#[test]
fn a_second_message_waits_for_the_running_turn_and_runs_after_it() {
    let (fake, started) = Fake::new();
    let server = server(&fake);
    let id = new_session(&server);
    let address = server.address();
    let path = format!("/sessions/{id}/messages");
    let first = std::thread::spawn({
        let path = path.clone();
        move || request(address, "POST", &path, Some(&json!({"message": "block"})), "")
    });
    assert_eq!(started.recv().unwrap(), format!("{id} block"));
    let second = std::thread::spawn({
        let path = path.clone();
        move || request(address, "POST", &path, Some(&json!({"message": "hello"})), "")
    });
    until("the second message is queued", || activity(&server, &id) == ("running".into(), 1));
    fake.open_gate();
    assert!(first.join().unwrap().2.contains("unblocked"));
    assert!(second.join().unwrap().2.contains("\"hi\""));
    assert_eq!(started.recv().unwrap(), format!("{id} hello"));
    assert_eq!(fake.log()[1..], [format!("turn {id} block"), format!("turn {id} hello")]);
}

#[test]
fn at_most_max_running_turns_work_at_once_and_the_others_wait_visibly() {
    let (fake, started) = Fake::new();
    let server = serve(&fake, 1, Limits::default());
    let (a, b) = (new_session(&server), new_session(&server));
    let address = server.address();
    let blocked = std::thread::spawn({
        let path = format!("/sessions/{a}/messages");
        move || request(address, "POST", &path, Some(&json!({"message": "block"})), "")
    });
    assert_eq!(started.recv().unwrap(), format!("{a} block"));
    let waiting = std::thread::spawn({
        let path = format!("/sessions/{b}/messages/stream");
        move || request(address, "POST", &path, Some(&json!({"message": "hello"})), "")
    });
    until("b waits for a slot", || activity(&server, &b).0 == "waiting");
    assert_eq!(call(&server, "GET", "/healthz", None).1["waiting"], 1);
    fake.open_gate();
    blocked.join().unwrap();
    let events = events(&waiting.join().unwrap().2);
    assert_eq!(events[0].2["kind"], "waiting", "{events:?}");
    assert!(events[0].2["text"].as_str().unwrap().contains("1 of 1 turns are running"));
    assert_eq!(events.last().unwrap().2, json!({"type": "exit", "code": 0, "error": null}));
}

#[test]
fn cancel_interrupts_the_running_turn_and_drops_the_queued_ones() {
    let (fake, started) = Fake::new();
    let server = server(&fake);
    let id = new_session(&server);
    let send = |message: &'static str| send_in_background(&server, &id, message);
    let running = send("block");
    started.recv().unwrap();
    let queued = send("hello");
    until("the second message is queued", || activity(&server, &id).1 == 1);
    assert_eq!(
        call(&server, "POST", &format!("/sessions/{id}/cancel"), None),
        (200, json!({"cancelled": 2}))
    );
    let end =
        |answer: (u16, String, String)| serde_json::from_str::<Value>(&answer.2).unwrap()["code"].clone();
    assert_eq!(end(running.join().unwrap()), 130);
    assert_eq!(end(queued.join().unwrap()), 130);
    assert!(!fake.log().contains(&format!("turn {id} hello")), "a cancelled queued message ran");
    assert_eq!(
        call(&server, "POST", &format!("/sessions/{id}/cancel"), None),
        (200, json!({"cancelled": 0}))
    );
}

#[test]
fn a_session_takes_at_most_sixteen_queued_messages() {
    let (fake, started) = Fake::new();
    let server = server(&fake);
    let id = new_session(&server);
    let address = server.address();
    let path = format!("/sessions/{id}/messages");
    let mut waiting = vec![std::thread::spawn({
        let path = path.clone();
        move || request(address, "POST", &path, Some(&json!({"message": "block"})), "")
    })];
    started.recv().unwrap();
    for _ in 0..turns::MAX_QUEUED_PER_SESSION {
        let path = path.clone();
        waiting.push(std::thread::spawn(move || {
            request(address, "POST", &path, Some(&json!({"message": "hello"})), "")
        }));
    }
    until("sixteen are queued", || activity(&server, &id).1 == 16);
    let (status, body) = call(&server, "POST", &path, Some(json!({"message": "one more"})));
    assert_eq!(status, 429, "{body}");
    fake.open_gate();
    for thread in waiting {
        assert_eq!(thread.join().unwrap().0, 200);
    }
}

#[test]
fn approvals_wait_for_an_answer_over_http_without_holding_a_slot() {
    let (fake, started) = Fake::new();
    let server = serve(&fake, 1, Limits::default());
    let (a, b) = (new_session(&server), new_session(&server));
    let ask = || send_in_background(&server, &a, "ask");
    let asking = ask();
    started.recv().unwrap();
    let approvals = format!("/sessions/{a}/approvals");
    until("the call waits for approval", || activity(&server, &a).0 == "approval");
    let listed = call(&server, "GET", &approvals, None).1;
    assert_eq!(
        listed,
        json!({"approvals": [{"call_id": "call_1", "name": "bash", "question": "bash wants to run: ls", "diff": null}]})
    );
    // The one slot is free while a person thinks: another session runs meanwhile.
    let other = call(&server, "POST", &format!("/sessions/{b}/messages"), Some(json!({"message": "hello"})));
    assert_eq!(other.1["answer"], "hi");
    assert_eq!(
        call(&server, "POST", &format!("{approvals}/call_1"), Some(json!({"decision": "maybe"}))).0,
        400
    );
    assert_eq!(
        call(&server, "POST", &format!("{approvals}/call_1"), Some(json!({"decision": "allow"}))).0,
        200
    );
    assert!(asking.join().unwrap().2.contains("\"allowed\""));
    assert_eq!(
        call(&server, "POST", &format!("{approvals}/call_1"), Some(json!({"decision": "allow"}))).0,
        404
    );
    let asking = ask();
    until("asked again", || activity(&server, &a).0 == "approval");
    let deny = json!({"decision": "deny", "reason": "use ls -la"});
    assert_eq!(call(&server, "POST", &format!("{approvals}/call_1"), Some(deny)).0, 200);
    assert!(asking.join().unwrap().2.contains("denied: use ls -la"));
}

#[test]
fn a_cancelled_turn_stops_waiting_for_its_approval() {
    let (fake, started) = Fake::new();
    let server = server(&fake);
    let id = new_session(&server);
    let asking = send_in_background(&server, &id, "ask");
    started.recv().unwrap();
    until("the call waits for approval", || activity(&server, &id).0 == "approval");
    call(&server, "POST", &format!("/sessions/{id}/cancel"), None);
    assert!(asking.join().unwrap().2.contains("denied: the turn was cancelled"));
    assert_eq!(call(&server, "GET", &format!("/sessions/{id}/approvals"), None).1, json!({"approvals": []}));
}

#[test]
fn a_busy_session_is_not_deleted() {
    let (fake, started) = Fake::new();
    let server = server(&fake);
    let id = new_session(&server);
    let running = send_in_background(&server, &id, "block");
    started.recv().unwrap();
    assert_eq!(call(&server, "DELETE", &format!("/sessions/{id}"), None).0, 409);
    fake.open_gate();
    running.join().unwrap();
    assert_eq!(call(&server, "DELETE", &format!("/sessions/{id}"), None), (200, json!({"deleted": id})));
    assert_eq!(call(&server, "GET", &format!("/sessions/{id}"), None).0, 404);
}

#[test]
fn stopping_cancels_running_turns_and_waits_for_them() {
    let (fake, started) = Fake::new();
    let server = server(&fake);
    let id = new_session(&server);
    let (address, running) = (server.address(), send_in_background(&server, &id, "block"));
    started.recv().unwrap();
    server.stop();
    server.wait();
    let answer: Value = serde_json::from_str(&running.join().unwrap().2).unwrap();
    assert_eq!(answer["code"], 130);
    assert!(TcpStream::connect(address).is_err(), "still listening after stop");
}

#[test]
fn tasks_pass_through_to_the_task_list() {
    let (fake, _) = Fake::new();
    let server = server(&fake);
    assert_eq!(call(&server, "GET", "/tasks", None), (200, json!({"tasks": []})));
    let added = call(&server, "POST", "/tasks", Some(json!({"name": "write docs"})));
    assert_eq!(added, (201, json!({"id": "1", "name": "write docs", "status": "pending"})));
    assert_eq!(call(&server, "POST", "/tasks", Some(json!({}))).0, 400);
    assert_eq!(call(&server, "POST", "/tasks/1/reset", None).0, 200);
    assert_eq!(call(&server, "POST", "/tasks/9/reset", None).0, 404);
}

// ---- slow and silent clients --------------------------------------------------------------

#[test]
fn a_slow_client_does_not_hold_up_the_others() {
    let (fake, _) = Fake::new();
    let server = server(&fake);
    let address = server.address();
    let mut slow = TcpStream::connect(address).unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHo").unwrap();
    let mut idle: Vec<TcpStream> = (0..200).map(|_| TcpStream::connect(address).unwrap()).collect();
    for stream in idle.iter_mut().step_by(2) {
        stream.write_all(b"POST /sessions HTTP/1.1\r\n").unwrap();
    }
    assert_eq!(call(&server, "GET", "/healthz", None).0, 200);
    slow.write_all(format!("st: {address}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n").as_bytes()).unwrap();
    let mut answer = String::new();
    slow.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[test]
fn past_the_pending_limit_the_oldest_unfinished_connection_is_closed() {
    let (fake, _) = Fake::new();
    let limits = Limits { max_pending: 8, request_deadline: Duration::from_secs(600) };
    let server = serve(&fake, 8, limits);
    let address = server.address();
    let mut idle: Vec<TcpStream> = (0..20).map(|_| TcpStream::connect(address).unwrap()).collect();
    assert_eq!(call(&server, "GET", "/healthz", None).0, 200);
    // The first connection was among the oldest: it was closed (EOF), with nothing said.
    let mut byte = [0; 1];
    assert_eq!(idle[0].read(&mut byte).unwrap(), 0);
}

#[test]
fn a_request_that_does_not_arrive_in_time_gets_a_408() {
    let (fake, _) = Fake::new();
    let limits = Limits { max_pending: 64, request_deadline: Duration::from_millis(50) };
    let server = serve(&fake, 8, limits);
    let mut slow = TcpStream::connect(server.address()).unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\n").unwrap();
    let mut answer = String::new();
    slow.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

// ---- the console ----------------------------------------------------------------------------

#[test]
fn the_console_is_one_page_with_no_external_asset_and_a_strict_policy() {
    let (fake, _) = Fake::new();
    let server = server(&fake);
    let address = server.address();
    let (status, head, page) =
        raw(address, format!("GET /?token={TOKEN} HTTP/1.1\r\nHost: {address}\r\n\r\n").as_bytes());
    assert_eq!(status, 200);
    let policy = head.lines().find_map(|line| line.strip_prefix("Content-Security-Policy: ")).unwrap();
    let script = include_str!("../console/console.js");
    let hash = console::base64(ring::digest::digest(&ring::digest::SHA256, script.as_bytes()).as_ref());
    assert!(policy.contains(&format!("script-src 'sha256-{hash}'")), "{policy}");
    assert!(policy.starts_with("default-src 'none'"));
    assert!(head.contains("Referrer-Policy: no-referrer"));
    assert!(page.contains(script));
    for external in ["http://", "https://", "src=", "@import", "url("] {
        assert!(!page.contains(external), "the page names {external}");
    }
    assert!(!page.contains("innerHTML"), "the page inserts HTML");
}

#[test]
fn base64_matches_rfc_4648() {
    let cases = [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("foobar", "Zm9vYmFy"),
    ];
    for (plain, encoded) in cases {
        assert_eq!(console::base64(plain.as_bytes()), encoded);
    }
}

// ---- the pieces -----------------------------------------------------------------------------

#[test]
fn a_head_is_parsed_once_whole_wherever_the_reads_cut_it() {
    let text = b"POST /sessions/a%20b?after=3&token=x%2By HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}";
    // Fed a byte at a time, as the listener feeds it: the head is found when its blank line is.
    let mut searched = 0;
    for cut in 1..=text.len() - 2 {
        match parse_head(&text[..cut], searched).unwrap() {
            Progress::NeedMore => searched = cut,
            Progress::Head(..) => assert_eq!(cut, text.len() - 2),
        }
    }
    let Progress::Head(head, start) = parse_head(text, 0).unwrap() else { panic!("no head") };
    assert_eq!(
        (head.method.as_str(), head.path.as_str(), head.body_length, start),
        ("POST", "/sessions/a%20b", 2, text.len() - 2)
    );
    assert_eq!(head.query_value("token").as_deref(), Some("x+y"));
    assert_eq!(head.header("host"), Some("h"));
    let refused = |text: &str| parse_head(text.as_bytes(), 0).unwrap_err().status;
    assert_eq!(refused("GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n"), 400);
    assert_eq!(refused("GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), 400);
    assert_eq!(refused("GET / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n"), 400);
    assert_eq!(refused("GET / HTTP/1.1\r\n folded\r\n\r\n"), 400);
    assert_eq!(refused("GET / HTTP/1.1\r\nBad Name: x\r\n\r\n"), 400);
    assert_eq!(refused("get / HTTP/1.1\r\n\r\n"), 400);
    assert_eq!(refused("GET nowhere HTTP/1.1\r\n\r\n"), 400);
    let many: String = (0..65).map(|at| format!("X-{at}: y\r\n")).collect();
    assert_eq!(refused(&format!("GET / HTTP/1.1\r\n{many}\r\n")), 431);
    assert_eq!(percent_decode("%41b%2F"), Some("Ab/".into()));
    assert_eq!(percent_decode("%4"), None);
    assert_eq!(percent_decode("%+1"), None);
    assert_eq!(percent_decode("%ff"), None);
}

#[test]
fn routes_name_every_url_and_its_methods() {
    assert_eq!(resolve("GET", "/"), Ok(Route::Console));
    assert_eq!(
        resolve("POST", "/sessions/a-1/approvals/toolu_01:x"),
        Ok(Route::Approval("a-1".into(), "toolu_01:x".into()))
    );
    assert_eq!(resolve("POST", "/sessions/a/messages/stream"), Ok(Route::MessagesStream("a".into())));
    assert_eq!(resolve("POST", "/tasks/3/reset"), Ok(Route::TaskReset("3".into())));
    assert_eq!(resolve("GET", "/sessions/a/messages").unwrap_err().status, 405);
    for path in ["/sessions/", "/sessions/.hidden", "/sessions/a%2Fb", "/sessions/%00", "/x", "//"] {
        assert_eq!(resolve("GET", path).unwrap_err().status, 404, "{path}");
    }
}

#[test]
fn the_log_keeps_its_newest_events_and_tells_a_late_reader_what_it_missed() {
    let (hub, sequence) = (Hub::default(), Sequence::default());
    for at in 0..MAX_LOG_EVENTS + 10 {
        hub.push(&sequence, 1, &json!({"type": "notice", "at": at}));
    }
    let batch = hub.after(&sequence, 0);
    assert_eq!((batch.events.len(), batch.missed), (MAX_LOG_EVENTS, 10));
    assert_eq!(batch.events[0].seq, 11);
    let batch = hub.after(&sequence, 5);
    assert_eq!(batch.missed, 5);
    hub.forget();
    let batch = hub.after(&sequence, sequence.last() - 1);
    assert_eq!((batch.events.len(), batch.missed), (0, 1));
    assert_eq!(hub.bytes(), 0);
}

#[test]
fn slots_serve_their_waiters_in_order() {
    let slots = Arc::new(Slots::new(1));
    assert!(slots.acquire(|_| panic!("waited"), || false));
    let order = Arc::new(Mutex::new(Vec::new()));
    let (waiting, waits) = channel();
    let mut threads = Vec::new();
    for at in 0..4 {
        let (slots, order, waiting) = (slots.clone(), order.clone(), waiting.clone());
        threads.push(std::thread::spawn(move || {
            assert!(slots.acquire(|_| waiting.send(()).unwrap(), || false));
            order.lock().unwrap().push(at);
            slots.release();
        }));
        waits.recv().unwrap(); // in line before the next one starts
    }
    slots.release();
    threads.into_iter().for_each(|thread| thread.join().unwrap());
    assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3]);
    assert_eq!(slots.counts(), (0, 0));
    // A waiter that gives up leaves the line.
    assert!(slots.acquire(|_| {}, || false));
    assert!(!slots.acquire(|_| {}, || true));
    assert_eq!(slots.counts(), (1, 0));
}

#[test]
fn a_journal_reads_as_the_events_a_live_turn_sends() {
    use crate::ch02_loop::{ToolCall, ToolStatus};
    use crate::ch05_sessions::{Body, Record};
    let record = |body| Record { seq: 0, ts: String::new(), body };
    let call = ToolCall { id: "c1".into(), name: "bash".into(), arguments: r#"{"command":"ls"}"#.into() };
    let records = vec![
        record(Body::System { content: "you are".into() }),
        record(Body::User { content: "list".into() }),
        record(Body::Assistant { content: Some(String::new()), tool_calls: vec![call.clone()], usage: None }),
        record(Body::ToolStarted { id: "c1".into(), name: "bash".into(), arguments: call.arguments.clone() }),
        record(Body::ToolFinished { id: "c1".into(), status: ToolStatus::Ok, content: "x".repeat(20_000) }),
        record(Body::Assistant { content: Some("done".into()), tool_calls: vec![], usage: None }),
        record(Body::Interrupted {}),
    ];
    let shown = transcript::transcript(&records);
    let events = shown["transcript"].as_array().unwrap();
    let types: Vec<&str> = events.iter().map(|event| event["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["user", "assistant", "tool_started", "tool_finished", "assistant", "notice"]);
    assert_eq!(events[1]["text"], Value::Null);
    assert_eq!(events[3]["name"], "bash");
    let content = events[3]["content"].as_str().unwrap();
    assert!(content.len() < 7_000 && content.contains("characters not shown"), "{}", content.len());
    assert_eq!(shown["omitted"], 0);
    let many: Vec<Record> =
        (0..transcript::MAX_EVENTS + 5).map(|_| record(Body::User { content: "hi".into() })).collect();
    assert_eq!(transcript::transcript(&many)["omitted"], 5);
}

#[test]
fn a_call_id_a_url_cannot_carry_gets_a_name_of_the_service() {
    let (fake, started) = Fake::new();
    let server = server(&fake);
    let id = new_session(&server);
    let address = server.address();
    let path = format!("/sessions/{id}/messages");
    let asking = std::thread::spawn(move || {
        request(address, "POST", &path, Some(&json!({"message": "ask ../x"})), "")
    });
    started.recv().unwrap();
    until("the call waits for approval", || activity(&server, &id).0 == "approval");
    let listed = call(&server, "GET", &format!("/sessions/{id}/approvals"), None).1;
    let call_id = listed["approvals"][0]["call_id"].as_str().unwrap().to_string();
    assert!(call_id.starts_with("approval-"), "{listed}");
    let answer = json!({"decision": "allow"});
    assert_eq!(call(&server, "POST", &format!("/sessions/{id}/approvals/{call_id}"), Some(answer)).0, 200);
    assert!(asking.join().unwrap().2.contains("\"allowed\""));
}
