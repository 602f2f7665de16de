//! The test kit: a model you can run offline, present in every chapter's state.
//!
//! Chapter 1's agent already needs a model, and no reader should need a key or a network to
//! run it; every test needs a model whose answers it can predict. So two pieces are here, not
//! in a chapter, and every state of the book compiles them:
//!
//! * [`scripted_server`]: a Chat Completions server on 127.0.0.1 that answers each request
//!   with a scripted [`scripted_server::Step`] (a reply, a stream, an error, a cut or a stall).
//! * [`demo`]: the rules behind `--demo`, served by the scripted server, so `--demo` drives
//!   the real HTTP client, tools and loop unchanged.
//!
//! * [`receiver`]: a plain HTTP receiver that records what was POSTed to it (webhooks).
//!
//! Beside them, the one copy of each helper the tests share ([`tempdir`], [`xorshift`]).

pub mod demo;
pub mod receiver;
pub mod scripted_server;
#[doc(hidden)]
pub mod tempdir;
#[doc(hidden)]
pub mod xorshift;
