//! Zero-copy TCP sends (`-Z`), as iperf3 does them: the data lives in a
//! memory-backed file (memfd), and each write is a `sendfile(2)` from it,
//! so the kernel passes the file's pages to the socket instead of copying
//! a user buffer into socket memory.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd};

/// A memory-backed file holding one block of data to send.
#[derive(Debug)]
pub struct SendFile {
    file: File,
    len: usize,
}

impl SendFile {
    /// A file holding `data` (the block every send repeats).
    pub fn new(data: &[u8]) -> io::Result<Self> {
        // SAFETY: the name is a NUL-terminated static string; memfd_create
        // only reads it and returns a new descriptor or -1.
        let fd = unsafe { libc::memfd_create(c"sonde-zerocopy".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just created by memfd_create and is owned by
        // nothing else; File takes sole ownership and closes it.
        let mut file = unsafe { File::from_raw_fd(fd) };
        file.write_all(data)?;
        Ok(Self {
            file,
            len: data.len(),
        })
    }

    /// Sends up to `len` bytes (at most the block) from the start of the
    /// file to `sock`; returns how many the kernel took.
    pub fn send_to(&self, sock: &impl AsRawFd, len: usize) -> io::Result<usize> {
        let mut offset: libc::off_t = 0;
        // SAFETY: both descriptors are open for the duration of the call
        // (borrowed from live owners); offset is a live local the kernel
        // updates; count is within the file's length.
        let n = unsafe {
            libc::sendfile(
                sock.as_raw_fd(),
                self.file.as_raw_fd(),
                &mut offset,
                len.min(self.len),
            )
        };
        usize::try_from(n).map_err(|_| io::Error::last_os_error())
    }
}
