//! The fixture kit's own checks (tests/common): what the other tests'
//! waits rest on.

use crate::common;
use common::ready::{local_listen_queue, wait_until};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

#[test]
fn a_listener_and_its_accept_queue_are_read_from_the_kernel_table() {
    let listener = TcpListener::bind("[::1]:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    assert_eq!(local_listen_queue(port), Some(0));
    let _client = TcpStream::connect(("::1", port)).unwrap();
    wait_until("the queued client", Duration::from_secs(5), || {
        local_listen_queue(port) == Some(1)
    });
    let _server_end = listener.accept().unwrap();
    assert_eq!(local_listen_queue(port), Some(0));
    drop(listener);
    assert_eq!(local_listen_queue(port), None);
}
