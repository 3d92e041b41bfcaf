//! The lab's only `unsafe`: raw AF_PACKET sockets for the link emulator.
//! Their options and their timestamped receive are the engine's
//! (`sonde_engine::sys`); here only what a packet socket needs alone:
//! the socket, its interface and its bind.
#![allow(unsafe_code)]

use sonde_engine::sys::{enable_rx_timestamps, setsockopt_raw};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const PACKET_QDISC_BYPASS: libc::c_int = 20;

/// A raw socket that reads every frame arriving on one interface and
/// sends frames out of it unchanged.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl PacketSocket {
    /// A socket on interface `ifname` with a receive ring ([`RxRing`]) of
    /// at least `ring_bytes` and room for `ring_frames` of the
    /// interface's largest frames. The ring is in place before the
    /// socket is bound: no frame waits anywhere else.
    pub fn bind(ifname: &str, ring_bytes: usize, ring_frames: usize) -> io::Result<(Self, RxRing)> {
        let name =
            CString::new(ifname).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: name is a valid NUL-terminated string for the call.
        let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if index == 0 {
            return Err(io::Error::last_os_error());
        }
        // Protocol 0: the socket receives nothing until it is bound.
        // SAFETY: plain socket(2) call; the result is checked.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
        check(raw)?;
        // SAFETY: raw is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let on: libc::c_int = 1;
        setsockopt_raw(&fd, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, &on)?;
        // Frames sent go straight to the device's queue: the emulator's
        // interfaces have no qdisc (sonde shapes at the hosts' ends), and
        // the generic path would hash every frame to pick one of the
        // veth's transmit queues. Without it (an old kernel), the
        // ordinary path.
        let _ = setsockopt_raw(&fd, libc::SOL_PACKET, PACKET_QDISC_BYPASS, &on);
        // Room for bursts of frames sent at line rate while the writer
        // sleeps. Root may go past wmem_max; otherwise keep the default.
        let buf: libc::c_int = 32 << 20;
        let _ = setsockopt_raw(&fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &buf);
        // Frames are stamped as the kernel takes them in.
        enable_rx_timestamps(&fd)?;
        // `ip netns exec` mounts the namespace's own /sys; without it,
        // room for the largest frame an interface may have.
        let mtu = std::fs::read_to_string(format!("/sys/class/net/{ifname}/mtu"))
            .ok()
            .and_then(|m| m.trim().parse::<usize>().ok())
            .unwrap_or(65_535);
        // The longest frame: the Ethernet header and a VLAN tag on top.
        let largest = mtu + 18;
        let sock = Self { fd };
        let ring = RxRing::new(&sock, largest, ring_bytes.max(ring_frames * largest))?;
        // SAFETY: sockaddr_ll is a plain C struct; all-zero is valid.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        addr.sll_ifindex = i32::try_from(index).unwrap_or(0);
        // SAFETY: addr is a live sockaddr_ll and its size is passed.
        check(unsafe {
            libc::bind(
                sock.fd.as_raw_fd(),
                std::ptr::from_ref(&addr).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })?;
        Ok((sock, ring))
    }

    /// Sends one frame out of the interface as it is.
    pub fn send(&self, frame: &[u8]) -> io::Result<usize> {
        // SAFETY: frame is live and readable for frame.len() bytes.
        let n = unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(usize::try_from(n).unwrap_or(0))
    }

    pub fn try_clone(&self) -> io::Result<Self> {
        Ok(Self {
            fd: self.fd.try_clone()?,
        })
    }
}

impl AsRawFd for PacketSocket {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.fd.as_raw_fd()
    }
}

/// Frames sent out of a [`PacketSocket`] with one `sendmmsg` each batch:
/// headers kept from batch to batch, pointed at the frames of the call.
#[derive(Default)]
pub struct SendBatch {
    iovecs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

impl SendBatch {
    /// Sends every frame of `frames`, in order, out of `sock`'s
    /// interface. A frame the kernel refuses (too long for the device,
    /// no buffer for it) is skipped, as one `send` that failed would be.
    /// Returns how many were sent.
    pub fn send<'a>(
        &mut self,
        sock: &PacketSocket,
        frames: impl IntoIterator<Item = &'a [u8]>,
    ) -> usize {
        self.iovecs.clear();
        self.iovecs
            .extend(frames.into_iter().map(|f: &'a [u8]| libc::iovec {
                iov_base: f.as_ptr().cast_mut().cast(),
                iov_len: f.len(),
            }));
        // SAFETY: mmsghdr is a plain C struct for which all-zero is valid.
        self.hdrs
            .resize_with(self.iovecs.len(), || unsafe { std::mem::zeroed() });
        for (h, iov) in self.hdrs.iter_mut().zip(&mut self.iovecs) {
            h.msg_hdr.msg_iov = std::ptr::from_mut(iov);
            h.msg_hdr.msg_iovlen = 1;
            h.msg_len = 0;
        }
        let (mut at, mut sent) = (0, 0);
        while at < self.hdrs.len() {
            let rest = &mut self.hdrs[at..];
            let n = libc::c_uint::try_from(rest.len()).unwrap_or(libc::c_uint::MAX);
            // SAFETY: each header points to one live iovec of this batch,
            // and each iovec to a frame of `frames`, which the caller's
            // borrow keeps readable for its length until this function
            // returns; no name, no control data.
            let rc = unsafe { libc::sendmmsg(sock.as_raw_fd(), rest.as_mut_ptr(), n, 0) };
            if rc > 0 {
                let k = usize::try_from(rc).unwrap_or(1);
                at += k;
                sent += k;
            } else if rc < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            } else {
                // Refused: skip the frame at the front.
                at += 1;
            }
        }
        sent
    }
}

/// Sets the nice value of thread `tid` (0: the calling one; threads it
/// starts afterwards inherit it). Negative: ahead of ordinary processes;
/// needs root or CAP_SYS_NICE.
pub fn set_nice(tid: u32, nice: i32) -> io::Result<()> {
    let tid = libc::id_t::from(tid);
    // SAFETY: setpriority(2) takes plain integers; the result is checked.
    check(unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, nice) })
}

/// `TPACKET_V2` of `enum tpacket_versions`.
const TPACKET_V2: libc::c_int = 1;

/// A packet socket's receive ring (PACKET_RX_RING, TPACKET_V2): the
/// kernel writes each arriving frame into a slot of memory mapped into
/// this process, with its length and receive time, and the reader takes
/// it from there: no system call and no copy to user space per frame, a
/// `poll` only when the ring is empty. Each slot holds one frame of up to
/// the size it was made for; a longer one is cut short by the kernel and
/// dropped here.
pub struct RxRing {
    fd: OwnedFd,
    map: std::ptr::NonNull<u8>,
    len: usize,
    block_size: usize,
    frame_size: usize,
    frames_per_block: usize,
    frames: usize,
    next: usize,
}

// SAFETY: the mapping belongs to this value alone (one reader thread owns
// it); moving it to another thread moves that ownership along.
unsafe impl Send for RxRing {}

impl std::fmt::Debug for RxRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RxRing({} × {} bytes)", self.frames, self.frame_size)
    }
}

impl RxRing {
    /// A ring of about `bytes` on `sock` (which must have no ring yet)
    /// for frames of up to `max_frame` bytes.
    fn new(sock: &PacketSocket, max_frame: usize, bytes: usize) -> io::Result<Self> {
        setsockopt_raw(
            &sock.fd,
            libc::SOL_PACKET,
            libc::PACKET_VERSION,
            &TPACKET_V2,
        )?;
        let align = |x: usize| (x + 15) & !15;
        // The header, then the frame at an offset the kernel aligns so
        // that the network header falls on a 16-byte boundary.
        let header = align(std::mem::size_of::<libc::tpacket2_hdr>());
        let frame_size = align(header + 16 + max_frame).next_power_of_two();
        let block_size = frame_size.max(1 << 20);
        let blocks = (bytes / block_size).max(2);
        let frames_per_block = block_size / frame_size;
        let req = libc::tpacket_req {
            tp_block_size: u32::try_from(block_size).map_err(|_| io::ErrorKind::InvalidInput)?,
            tp_block_nr: u32::try_from(blocks).map_err(|_| io::ErrorKind::InvalidInput)?,
            tp_frame_size: u32::try_from(frame_size).map_err(|_| io::ErrorKind::InvalidInput)?,
            tp_frame_nr: u32::try_from(blocks * frames_per_block)
                .map_err(|_| io::ErrorKind::InvalidInput)?,
        };
        setsockopt_raw(&sock.fd, libc::SOL_PACKET, libc::PACKET_RX_RING, &req)?;
        let len = block_size * blocks;
        // SAFETY: maps the ring the kernel just made for this socket, at
        // its exact size; the result is checked.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                sock.fd.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let map = std::ptr::NonNull::new(map.cast::<u8>()).ok_or(io::ErrorKind::Other)?;
        Ok(Self {
            fd: sock.fd.try_clone()?,
            map,
            len,
            block_size,
            frame_size,
            frames_per_block,
            frames: blocks * frames_per_block,
            next: 0,
        })
    }

    /// The header of slot `i`.
    fn slot(&self, i: usize) -> *mut libc::tpacket2_hdr {
        let at = (i / self.frames_per_block) * self.block_size
            + (i % self.frames_per_block) * self.frame_size;
        // SAFETY: `at` is the start of slot i, inside the mapping of
        // `len` bytes (i < frames); slots are 16-byte aligned.
        unsafe { self.map.as_ptr().add(at).cast() }
    }

    /// The status word of slot `i`, shared with the kernel.
    fn status(&self, i: usize) -> &std::sync::atomic::AtomicU32 {
        // SAFETY: tp_status is the first field of the slot's header, an
        // aligned u32 that lives as long as the mapping; the kernel and
        // this reader hand the slot over through it.
        unsafe { std::sync::atomic::AtomicU32::from_ptr(self.slot(i).cast()) }
    }

    /// Waits up to `timeout` for a frame, then hands each frame ready (at
    /// most `max`) to `f` with the kernel's receive time (ns since the
    /// Unix epoch) and gives its slot back. Returns how many were handed
    /// over (0: none came in time).
    pub fn read(
        &mut self,
        timeout: std::time::Duration,
        max: usize,
        mut f: impl FnMut(&[u8], Option<i64>),
    ) -> io::Result<usize> {
        use std::sync::atomic::Ordering;
        if self.status(self.next).load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
            let mut pfd = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN | libc::POLLERR,
                revents: 0,
            };
            let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
            // SAFETY: one live pollfd, its count passed.
            let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        let mut n = 0;
        while n < max {
            let i = self.next;
            let status = self.status(i).load(Ordering::Acquire);
            if status & libc::TP_STATUS_USER == 0 {
                break;
            }
            // SAFETY: the slot is the reader's until its status goes back
            // to the kernel (below); the kernel wrote its header first.
            let h = unsafe { &*self.slot(i) };
            let (mac, snap, len) = (usize::from(h.tp_mac), h.tp_snaplen as usize, h.tp_len);
            if mac + snap <= self.frame_size && snap as u32 == len {
                let stamp = i64::from(h.tp_sec) * 1_000_000_000 + i64::from(h.tp_nsec);
                // SAFETY: the frame lies inside the slot (checked above).
                let frame =
                    unsafe { std::slice::from_raw_parts(self.slot(i).cast::<u8>().add(mac), snap) };
                f(frame, (stamp > 0).then_some(stamp));
                n += 1;
            }
            self.status(i)
                .store(libc::TP_STATUS_KERNEL, Ordering::Release);
            self.next = (i + 1) % self.frames;
        }
        Ok(n)
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`, once.
        unsafe {
            libc::munmap(self.map.as_ptr().cast(), self.len);
        }
    }
}
