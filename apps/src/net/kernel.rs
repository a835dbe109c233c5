//! What the kernel keeps for a UDP socket that `std` does not reach: the
//! sizes of its receive and send buffers, and its count of datagrams dropped
//! because the receive buffer was full.
//!
//! A datagram arriving at a full receive buffer is dropped silently: the
//! sender sees a loss that no emulated link decided. The buffers are
//! therefore sized for the bursts a path can carry, and the relay asks the
//! kernel to count what it dropped anyway (Linux's `SO_RXQ_OVFL`), so that a
//! measurement can be told from an artefact of the measuring. On Linux this
//! goes through `nix` (the workspace forbids unsafe code); elsewhere the
//! buffers keep the system's sizes and the drops are unknown.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;

/// A buffer of a socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Buffer {
    /// Datagrams received and not yet read (`SO_RCVBUF`).
    Receive,
    /// Datagrams written and not yet sent (`SO_SNDBUF`).
    Send,
}

impl Buffer {
    fn name(self) -> &'static str {
        match self {
            Buffer::Receive => "receive",
            Buffer::Send => "send",
        }
    }

    /// The sysctl capping what an unprivileged process may ask for.
    fn limit(self) -> &'static str {
        match self {
            Buffer::Receive => "net.core.rmem_max",
            Buffer::Send => "net.core.wmem_max",
        }
    }
}

/// What the kernel granted a socket, in bytes of buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferSizes {
    /// The receive buffer.
    pub receive: usize,
    /// The send buffer.
    pub send: usize,
}

/// Largest size asked for: the kernel takes an `int` and doubles it.
const MAX_BUFFER: usize = (i32::MAX / 2) as usize;

/// Asks for `bytes` of receive and of send buffer on `socket` and returns
/// what the kernel granted. Beyond `net.core.rmem_max` (`wmem_max`) only a
/// privileged process gets its size; a shortfall is logged at warn level,
/// since the kernel will drop what does not fit.
pub fn size_buffers(socket: &UdpSocket, bytes: usize) -> BufferSizes {
    let bytes = bytes.min(MAX_BUFFER);
    BufferSizes {
        receive: size_buffer(socket, Buffer::Receive, bytes),
        send: size_buffer(socket, Buffer::Send, bytes),
    }
}

fn size_buffer(socket: &UdpSocket, buffer: Buffer, bytes: usize) -> usize {
    let granted = os::size_buffer(socket, buffer, bytes);
    if granted < bytes {
        log::warn!(
            "UDP {} buffer of {}: {granted} B granted of {bytes} B asked; datagrams beyond it \
             are dropped by the kernel (raise {}, or run as root)",
            buffer.name(),
            socket
                .local_addr()
                .map_or_else(|_| "a socket".into(), |a| a.to_string()),
            buffer.limit(),
        );
    }
    granted
}

/// Receives datagrams from one socket together with the number the kernel
/// dropped on it because its receive buffer was full.
///
/// The kernel stamps each datagram it queues with the socket's running
/// total of drops so far; a drop therefore shows when the next datagram
/// after it is read, and drops after the last datagram read never show.
pub struct DropCountingReceiver {
    socket: Arc<UdpSocket>,
    counting: bool,
    seen: DropCount,
    control: Vec<u8>,
}

impl DropCountingReceiver {
    /// Receives from `socket`, asking the kernel to count its drops.
    pub fn new(socket: Arc<UdpSocket>) -> DropCountingReceiver {
        let counting = os::count_drops(&socket);
        DropCountingReceiver {
            socket,
            counting,
            seen: DropCount::default(),
            control: os::control_buffer(),
        }
    }

    /// Whether the kernel counts this socket's drops; when it does not, the
    /// drops [`recv_from`](Self::recv_from) reports are always 0 and mean
    /// "unknown".
    pub fn counts_drops(&self) -> bool {
        self.counting
    }

    /// Waits for one datagram (as long as the socket's read timeout), and
    /// returns its length, its sender and how many datagrams the kernel
    /// dropped since the previous one read.
    pub fn recv_from(&mut self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, u64)> {
        let (len, from, total) = os::recv(&self.socket, buf, &mut self.control)?;
        let dropped = total.map_or(0, |total| self.seen.advance(total));
        Ok((len, from, dropped))
    }
}

/// The kernel's running total of drops on one socket as last read. It is a
/// 32-bit counter that wraps; the kernel attaches it only once it is not
/// zero, so a datagram without it means no drop yet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct DropCount(u32);

impl DropCount {
    /// Takes the total `total` read from a datagram and returns the drops
    /// it adds to the last one read.
    fn advance(&mut self, total: u32) -> u64 {
        let new = total.wrapping_sub(self.0);
        self.0 = total;
        u64::from(new)
    }
}

#[cfg(target_os = "linux")]
mod os {
    use std::io::{self, IoSliceMut};
    use std::net::{SocketAddr, UdpSocket};
    use std::os::fd::AsRawFd;

    use nix::sys::socket::{
        getsockopt, recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags, SockaddrStorage,
    };

    use super::Buffer;

    /// Sets the buffer, forcing past the sysctl limit when allowed
    /// (`CAP_NET_ADMIN`), and returns the size granted.
    pub(super) fn size_buffer(socket: &UdpSocket, buffer: Buffer, bytes: usize) -> usize {
        // Refused only for a bad value; what was granted is read back below.
        let _ = match buffer {
            Buffer::Receive => setsockopt(socket, sockopt::RcvBuf, &bytes),
            Buffer::Send => setsockopt(socket, sockopt::SndBuf, &bytes),
        };
        if granted(socket, buffer) < bytes {
            // Refused (EPERM) without the capability: the granted size stays.
            let _ = match buffer {
                Buffer::Receive => setsockopt(socket, sockopt::RcvBufForce, &bytes),
                Buffer::Send => setsockopt(socket, sockopt::SndBufForce, &bytes),
            };
        }
        granted(socket, buffer)
    }

    /// Linux doubles the size asked for, to cover its bookkeeping (a
    /// full-size datagram costs it about twice its payload), and reports the
    /// doubled size: the size asked for that it granted is half of that.
    fn granted(socket: &UdpSocket, buffer: Buffer) -> usize {
        let reported = match buffer {
            Buffer::Receive => getsockopt(socket, sockopt::RcvBuf),
            Buffer::Send => getsockopt(socket, sockopt::SndBuf),
        };
        reported.map_or(0, |bytes| bytes / 2)
    }

    pub(super) fn count_drops(socket: &UdpSocket) -> bool {
        setsockopt(socket, sockopt::RxqOvfl, &1).is_ok()
    }

    pub(super) fn control_buffer() -> Vec<u8> {
        nix::cmsg_space!(u32)
    }

    /// `recvmsg`: the datagram, its sender and the drop total it carries.
    pub(super) fn recv(
        socket: &UdpSocket,
        buf: &mut [u8],
        control: &mut [u8],
    ) -> io::Result<(usize, SocketAddr, Option<u32>)> {
        let mut iov = [IoSliceMut::new(buf)];
        let msg = recvmsg::<SockaddrStorage>(
            socket.as_raw_fd(),
            &mut iov,
            Some(control),
            MsgFlags::empty(),
        )?;
        let from = msg
            .address
            .as_ref()
            .and_then(socket_addr)
            .ok_or_else(|| io::Error::other("a datagram without an IP source address"))?;
        // A truncated control message (MSG_CTRUNC) reads as no count.
        let total = msg.cmsgs().ok().and_then(|mut cmsgs| {
            cmsgs.find_map(|cmsg| match cmsg {
                ControlMessageOwned::RxqOvfl(total) => Some(total),
                _ => None,
            })
        });
        Ok((msg.bytes, from, total))
    }

    fn socket_addr(address: &SockaddrStorage) -> Option<SocketAddr> {
        address
            .as_sockaddr_in()
            .map(|v4| SocketAddr::from(*v4))
            .or_else(|| address.as_sockaddr_in6().map(|v6| SocketAddr::from(*v6)))
    }
}

/// Without Linux's socket options: the system's buffer sizes, no count.
#[cfg(not(target_os = "linux"))]
mod os {
    use std::io;
    use std::net::{SocketAddr, UdpSocket};

    use super::Buffer;

    pub(super) fn size_buffer(_: &UdpSocket, _: Buffer, _: usize) -> usize {
        0
    }

    pub(super) fn count_drops(_: &UdpSocket) -> bool {
        false
    }

    pub(super) fn control_buffer() -> Vec<u8> {
        Vec::new()
    }

    pub(super) fn recv(
        socket: &UdpSocket,
        buf: &mut [u8],
        _: &mut [u8],
    ) -> io::Result<(usize, SocketAddr, Option<u32>)> {
        let (len, from) = socket.recv_from(buf)?;
        Ok((len, from, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drop_total_is_read_as_increments_across_its_wrap() {
        let mut seen = DropCount::default();
        assert_eq!(seen.advance(3), 3);
        assert_eq!(seen.advance(3), 0);
        assert_eq!(seen.advance(10), 7);
        let mut near_wrap = DropCount(u32::MAX - 1);
        assert_eq!(near_wrap.advance(2), 4);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn sizes_are_granted_as_asked_within_the_limit() {
        let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let sizes = size_buffers(&socket, 100_000);
        assert_eq!(
            sizes,
            BufferSizes {
                receive: 100_000,
                send: 100_000
            }
        );
    }

    /// Reads until nothing came for the read timeout: (datagrams read,
    /// drops counted).
    #[cfg(target_os = "linux")]
    fn drain(counting: &mut DropCountingReceiver) -> (usize, u64) {
        let mut buf = [0u8; 2000];
        let (mut read, mut dropped) = (0, 0);
        while let Ok((len, _, new)) = counting.recv_from(&mut buf) {
            assert_eq!(len, 1000);
            read += 1;
            dropped += new;
        }
        (read, dropped)
    }

    /// Overflows a tiny receive buffer and checks that every datagram sent
    /// is either read or counted as dropped by the kernel.
    #[cfg(target_os = "linux")]
    #[test]
    fn every_datagram_is_read_or_counted_as_dropped() {
        use nix::sys::socket::{setsockopt, sockopt};
        use std::time::Duration;

        const SENT: usize = 200;
        let receiver = Arc::new(UdpSocket::bind("127.0.0.1:0").expect("bind"));
        // The kernel's smallest buffer: a few datagrams.
        setsockopt(receiver.as_ref(), sockopt::RcvBuf, &1).expect("SO_RCVBUF");
        receiver
            .set_read_timeout(Some(Duration::from_millis(200)))
            .expect("timeout");
        let mut counting = DropCountingReceiver::new(Arc::clone(&receiver));
        assert!(counting.counts_drops());
        let sender = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let to = receiver.local_addr().expect("addr");
        for _ in 0..SENT {
            sender.send_to(&[7; 1000], to).expect("send");
        }
        let (read, dropped) = drain(&mut counting);
        assert!(read < SENT, "the buffer took all {SENT}");
        // The drops after the last datagram queued show on the next one.
        sender.send_to(&[7; 1000], to).expect("send");
        let (read_after, dropped_after) = drain(&mut counting);
        let dropped = usize::try_from(dropped + dropped_after).expect("count");
        assert!(dropped > 0);
        assert_eq!(read + read_after + dropped, SENT + 1);
    }
}
