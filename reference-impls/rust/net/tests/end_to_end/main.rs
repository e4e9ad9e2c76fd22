//! End-to-end tests of the fp-server and fp-load binaries on 127.0.0.1: the counts of the load
//! client agree with the server's, errors close only the offending connection, half-close gets
//! every reply, and the load client detects missing replies (and stops, bounded by its timeout).
//!
//! One module a job: `common` (starting the server, running the load client, reading reports),
//! then the load client's modes (`load_modes`), errors and failures (`failures`), the command
//! lines (`cli`), and the rpc and websocket servers (`rpc_websocket`).

mod cli;
mod common;
mod failures;
mod load_modes;
mod rpc_websocket;
