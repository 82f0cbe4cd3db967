//! Which OS user owns a loopback TCP socket: the other end of a browser connection, the runtime's
//! end of a connection to it, and the socket listening at a runtime's address.
//!
//! Any local user can connect to a `127.0.0.1` port, and any local user can listen on a port a
//! runtime has just closed. The attach proxy and the status API client therefore ask the kernel
//! who owns the exact socket at the other end of each connection before they read a byte from it
//! or write a token to it.
//!
//! On Linux the kernel's socket table answers: first the `sock_diag` netlink interface (one
//! exact-match query per connection, the same interface `ss` uses), then `/proc/net/tcp{,6}` when
//! netlink is unavailable (some sandboxes). Both report the uid that created the socket; an
//! accepted socket carries the uid of its listener. No other platform is supported yet: there
//! [`Platform::check`] says so, `doctor` reports it, and `docs/attach.md` documents it.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;

/// What the kernel says about one socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketOwner {
    /// The uid that created the socket (for an accepted socket, its listener's).
    pub uid: u32,
    /// The socket's inode; 0 for a connection still waiting in its listener's accept queue.
    pub inode: u64,
}

/// Whether this platform can tell who owns a loopback socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    /// Connections are checked (Linux).
    Checked,
    /// The platform gives no way to tell; connections are not checked.
    Unchecked,
}

impl Platform {
    /// What this build does.
    pub fn check() -> Platform {
        if cfg!(target_os = "linux") {
            Platform::Checked
        } else {
            Platform::Unchecked
        }
    }
}

/// The effective uid of this process: the only user whose sockets are talked to.
pub fn own_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Whose socket is at the other end of a TCP connection of ours.
#[derive(Debug)]
pub enum Peer {
    /// A socket of this process's user (or the platform cannot tell, see [`Platform`]).
    Own,
    /// A socket of another user.
    Other {
        /// Its uid.
        uid: u32,
    },
    /// The kernel knows no such socket any more: it closed.
    Gone,
    /// The kernel could not be asked.
    Unknown(io::Error),
}

/// Where the socket a connection would reach is looked up: one query per address
/// ([`SocketTable`]) or a table of every listener read once ([`Listeners`]).
pub trait ListenerLookup {
    /// The owner of the socket a connection to `addr` would reach, `None` when nothing listens.
    fn listener(&mut self, addr: SocketAddr) -> io::Result<Option<SocketOwner>>;
}

/// Every TCP socket that was listening (both families) when [`SocketTable::listening`] read
/// them: for checking many addresses at once, where one query per address would cost a round
/// trip to the kernel each.
#[derive(Debug, Default)]
pub struct Listeners {
    /// By address, an IPv4-mapped IPv6 address as the IPv4 address it maps.
    exact: HashMap<SocketAddr, SocketOwner>,
    /// Listeners on `0.0.0.0` (`false`) or `::` (`true`), by port.
    wildcard: HashMap<(u16, bool), SocketOwner>,
}

impl Listeners {
    fn add(&mut self, addr: SocketAddr, owner: SocketOwner) {
        let addr = canonical(addr);
        if addr.ip().is_unspecified() {
            self.wildcard
                .entry((addr.port(), addr.is_ipv6()))
                .or_insert(owner);
        } else {
            self.exact.entry(addr).or_insert(owner);
        }
    }

    /// The listener a connection to `addr` would reach, as the kernel picks it: the one bound to
    /// `addr` itself, else one bound to the wildcard address of its family on that port (an IPv4
    /// address is also reached by a dual-stack `::` listener).
    pub fn listener(&self, addr: SocketAddr) -> Option<SocketOwner> {
        let addr = canonical(addr);
        let wildcard = |v6: bool| self.wildcard.get(&(addr.port(), v6)).copied();
        self.exact.get(&addr).copied().or_else(|| {
            if addr.is_ipv4() {
                wildcard(false).or_else(|| wildcard(true))
            } else {
                wildcard(true)
            }
        })
    }
}

impl ListenerLookup for Listeners {
    fn listener(&mut self, addr: SocketAddr) -> io::Result<Option<SocketOwner>> {
        Ok(Listeners::listener(self, addr))
    }
}

impl ListenerLookup for SocketTable {
    fn listener(&mut self, addr: SocketAddr) -> io::Result<Option<SocketOwner>> {
        SocketTable::listener(self, addr)
    }
}

/// `addr` with an IPv4-mapped IPv6 address as the IPv4 address it maps.
fn canonical(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr.ip().to_canonical(), addr.port())
}

/// Answers ownership questions, keeping one netlink socket open between queries.
///
/// Each [`crate::RuntimeConnector`] owns one (behind a `Mutex` its tasks share).
pub struct SocketTable {
    #[cfg(target_os = "linux")]
    diag: Option<linux::SockDiag>,
}

impl Default for SocketTable {
    fn default() -> Self {
        Self::new()
    }
}

impl SocketTable {
    /// Opens the netlink socket (Linux; on failure every query reads `/proc` instead).
    pub fn new() -> Self {
        Self {
            #[cfg(target_os = "linux")]
            diag: linux::SockDiag::open().ok(),
        }
    }

    /// The owner of the established TCP socket whose own address is `local` and whose peer is
    /// `remote`, or `None` when there is none (it closed, is closing, or is not on this
    /// machine). Never the listener at `local`, which the kernel offers for a vanished pair.
    pub fn connection(
        &mut self,
        local: SocketAddr,
        remote: SocketAddr,
    ) -> io::Result<Option<SocketOwner>> {
        self.lookup(local, Some(remote))
    }

    /// Whose socket is at the other end of `stream`. Where the platform cannot tell, [`Peer::Own`].
    pub(crate) fn peer_of(&mut self, stream: &tokio::net::TcpStream) -> Peer {
        if Platform::check() == Platform::Unchecked {
            return Peer::Own;
        }
        let (local, remote) = match (stream.local_addr(), stream.peer_addr()) {
            (Ok(local), Ok(remote)) => (local, remote),
            (Err(error), _) | (_, Err(error)) => return Peer::Unknown(error),
        };
        match self.connection(remote, local) {
            Ok(Some(owner)) if owner.uid == own_uid() => Peer::Own,
            Ok(Some(owner)) => Peer::Other { uid: owner.uid },
            Ok(None) => Peer::Gone,
            Err(error) => Peer::Unknown(error),
        }
    }

    /// The owner of the socket a connection to `addr` would reach: the listener at `addr`.
    pub fn listener(&mut self, addr: SocketAddr) -> io::Result<Option<SocketOwner>> {
        self.lookup(addr, None)
    }

    /// Every listening TCP socket now, in one `sock_diag` dump per family (`/proc/net/tcp{,6}`
    /// without netlink).
    #[cfg(target_os = "linux")]
    pub fn listening(&mut self) -> io::Result<Listeners> {
        if let Some(diag) = self.diag.as_mut() {
            let mut listeners = Listeners::default();
            match diag.listening(&mut |addr, owner| listeners.add(addr, owner)) {
                Ok(()) => return Ok(listeners),
                // As for one query: a netlink socket that failed once is not trusted again.
                Err(_) => self.diag = None,
            }
        }
        Self::listening_from_proc()
    }

    /// Like [`SocketTable::listening`], always from `/proc/net/tcp{,6}`: its fallback, and for
    /// tests.
    #[cfg(target_os = "linux")]
    pub fn listening_from_proc() -> io::Result<Listeners> {
        let mut listeners = Listeners::default();
        linux::proc_net_listening(&mut |addr, owner| listeners.add(addr, owner))?;
        Ok(listeners)
    }

    /// No platform but Linux tells.
    #[cfg(not(target_os = "linux"))]
    pub fn listening(&mut self) -> io::Result<Listeners> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this platform does not tell who owns a socket",
        ))
    }

    #[cfg(target_os = "linux")]
    fn lookup(
        &mut self,
        local: SocketAddr,
        remote: Option<SocketAddr>,
    ) -> io::Result<Option<SocketOwner>> {
        if let Some(diag) = self.diag.as_mut() {
            match diag.lookup(local, remote) {
                Ok(found) => return Ok(found),
                // A netlink socket that failed once is not trusted again; /proc answers instead.
                Err(_) => self.diag = None,
            }
        }
        linux::proc_net_lookup(local, remote)
    }

    /// Like [`SocketTable::connection`], always from `/proc/net/tcp{,6}` (the fallback), for
    /// benchmarks and tests.
    #[cfg(target_os = "linux")]
    pub fn connection_from_proc(
        local: SocketAddr,
        remote: SocketAddr,
    ) -> io::Result<Option<SocketOwner>> {
        linux::proc_net_lookup(local, Some(remote))
    }

    #[cfg(not(target_os = "linux"))]
    fn lookup(
        &mut self,
        _local: SocketAddr,
        _remote: Option<SocketAddr>,
    ) -> io::Result<Option<SocketOwner>> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this platform does not tell who owns a socket",
        ))
    }
}

/// Whether the process `pid` holds the socket with `inode` (Linux: one of its `/proc/PID/fd`
/// entries is `socket:[inode]`). `None` where the platform does not tell.
pub(crate) fn process_holds_socket(pid: u32, inode: u64) -> Option<bool> {
    #[cfg(target_os = "linux")]
    {
        Some(linux::process_holds_socket(pid, inode))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (pid, inode);
        None
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io::{self, BufRead, Read};
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
    use std::ops::ControlFlow;

    use netlink_packet_core::{
        NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
    };
    use netlink_packet_sock_diag::constants::{
        AF_INET, AF_INET6, IPPROTO_TCP, TCP_ESTABLISHED, TCP_LISTEN,
    };
    use netlink_packet_sock_diag::inet::{ExtensionFlags, InetRequest, SocketId, StateFlags};
    use netlink_packet_sock_diag::SockDiagMessage;
    use netlink_sys::{protocols::NETLINK_SOCK_DIAG, Socket, SocketAddr as NetlinkAddr};

    use super::SocketOwner;

    /// Largest `/proc/net/tcp{,6}` read before giving up. A line is 150 bytes, so this is
    /// about 100,000 sockets: far beyond a desktop, and it keeps a flood of sockets opened by
    /// another user from making every check arbitrarily slow (the check then fails closed).
    const PROC_NET_MAX_BYTES: u64 = 16 * 1024 * 1024;

    /// Most `/proc/PID/fd` entries looked at for one socket; a runtime holds a few dozen.
    const MAX_FDS_SCANNED: usize = 65_536;

    /// Room for one `inet_diag_msg` answer or an error (with the request echoed back).
    const ANSWER_BUFFER: usize = 8 * 1024;

    /// Room for one part of a dump: the kernel fills at most 32 KiB per part.
    const DUMP_BUFFER: usize = 64 * 1024;

    /// Most listeners a dump is read for, like [`PROC_NET_MAX_BYTES`] for `/proc`: another user
    /// who opens a flood of listening sockets makes the check fail closed, not take forever.
    const MAX_LISTENERS: usize = 100_000;

    /// A `NETLINK_SOCK_DIAG` socket for exact-match queries.
    pub(super) struct SockDiag {
        socket: Socket,
        sequence: u32,
        answer: Vec<u8>,
    }

    impl SockDiag {
        pub(super) fn open() -> io::Result<Self> {
            let mut socket = Socket::new(NETLINK_SOCK_DIAG)?;
            socket.bind_auto()?;
            socket.connect(&NetlinkAddr::new(0, 0))?;
            // The kernel answers an exact-match query while handling the send, so the answer
            // is queued before `send` returns; a non-blocking receive can never hang on it.
            socket.set_non_blocking(true)?;
            Ok(Self {
                socket,
                sequence: 0,
                answer: vec![0; ANSWER_BUFFER],
            })
        }

        pub(super) fn lookup(
            &mut self,
            local: SocketAddr,
            remote: Option<SocketAddr>,
        ) -> io::Result<Option<SocketOwner>> {
            self.sequence = self.sequence.wrapping_add(1);
            let request = exact_request(local, remote, self.sequence);
            self.socket.send(&request, 0)?;
            let received = self.socket.recv(&mut &mut self.answer[..], 0)?;
            let message = answer_to(self.sequence, &self.answer[..received])?;
            match message.payload {
                NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(response)) => {
                    let header = &response.header;
                    if !is_the_socket_asked(header.state, &header.socket_id, local, remote) {
                        return Ok(None);
                    }
                    Ok(Some(SocketOwner {
                        uid: header.uid,
                        inode: u64::from(header.inode),
                    }))
                }
                NetlinkPayload::Error(error) => match error.code {
                    Some(code) => {
                        let error = io::Error::from_raw_os_error(-code.get());
                        // ENOENT: the kernel has no socket with that address pair.
                        if error.kind() == io::ErrorKind::NotFound {
                            Ok(None)
                        } else {
                            Err(error)
                        }
                    }
                    None => Err(io::Error::new(io::ErrorKind::InvalidData, "empty answer")),
                },
                _ => Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "unexpected sock_diag answer",
                )),
            }
        }
    }

    impl SockDiag {
        /// Calls `found` with every TCP listener (both families) and its owner.
        ///
        /// A dump's first part is queued while the request is sent and each later part while
        /// the one before is received, so the non-blocking receives never wait.
        pub(super) fn listening(
            &mut self,
            found: &mut dyn FnMut(SocketAddr, SocketOwner),
        ) -> io::Result<()> {
            let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
            let mut buffer = vec![0; DUMP_BUFFER];
            let mut seen = 0usize;
            for family in [AF_INET, AF_INET6] {
                self.sequence = self.sequence.wrapping_add(1);
                self.socket.send(&dump_request(family, self.sequence), 0)?;
                'parts: loop {
                    let received = self.socket.recv(&mut &mut buffer[..], 0)?;
                    let mut rest = &buffer[..received];
                    if rest.is_empty() {
                        return Err(invalid("sock_diag ended a dump early".into()));
                    }
                    while !rest.is_empty() {
                        let message = answer_to(self.sequence, rest)?;
                        // Each message starts on a 4-byte boundary; a length shorter than its
                        // own header would never move on.
                        let length = (message.header.length as usize).next_multiple_of(4);
                        if length < 16 {
                            return Err(invalid("a sock_diag message too short".into()));
                        }
                        match message.payload {
                            NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(r)) => {
                                seen += 1;
                                if seen > MAX_LISTENERS {
                                    return Err(io::Error::other(
                                        "too many listening sockets to check",
                                    ));
                                }
                                let id = &r.header.socket_id;
                                found(
                                    SocketAddr::new(id.source_address, id.source_port),
                                    SocketOwner {
                                        uid: r.header.uid,
                                        inode: u64::from(r.header.inode),
                                    },
                                );
                            }
                            NetlinkPayload::Done(_) => break 'parts,
                            NetlinkPayload::Error(error) => {
                                return Err(error.code.map_or_else(
                                    || invalid("empty sock_diag answer".into()),
                                    |code| io::Error::from_raw_os_error(-code.get()),
                                ));
                            }
                            _ => return Err(invalid("unexpected sock_diag answer".into())),
                        }
                        rest = rest.get(length..).unwrap_or_default();
                    }
                }
            }
            Ok(())
        }
    }

    /// Whether an exact-match answer is the socket that was asked about. The kernel answers an
    /// exact query the way it routes a packet: the established socket of that address pair, or
    /// else (the connection is gone) the listener at `local` or a `TIME_WAIT` remnant. For a
    /// connection only an established socket of exactly that pair counts (issue 29: a listener's
    /// answer for a vanished connection named the listener's owner as the connection's); for a
    /// listener query, only a listening socket.
    fn is_the_socket_asked(
        state: u8,
        id: &SocketId,
        local: SocketAddr,
        remote: Option<SocketAddr>,
    ) -> bool {
        let own = SocketAddr::new(id.source_address, id.source_port);
        match remote {
            Some(remote) => {
                state == TCP_ESTABLISHED
                    && same(own, local)
                    && same(
                        SocketAddr::new(id.destination_address, id.destination_port),
                        remote,
                    )
            }
            None => state == TCP_LISTEN && own.port() == local.port(),
        }
    }

    /// The first netlink message in `bytes`, which must answer the request numbered `sequence`.
    fn answer_to(sequence: u32, bytes: &[u8]) -> io::Result<NetlinkMessage<SockDiagMessage>> {
        let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
        let message = NetlinkMessage::<SockDiagMessage>::deserialize(bytes)
            .map_err(|e| invalid(e.to_string()))?;
        if message.header.sequence_number != sequence {
            return Err(invalid("sock_diag answered another query".into()));
        }
        Ok(message)
    }

    /// One `SOCK_DIAG_BY_FAMILY` dump request for every listening TCP socket of `family`.
    fn dump_request(family: u8, sequence: u32) -> Vec<u8> {
        let request = InetRequest {
            family,
            protocol: IPPROTO_TCP,
            extensions: ExtensionFlags::empty(),
            states: StateFlags::LISTEN,
            socket_id: if family == AF_INET {
                SocketId::new_v4()
            } else {
                SocketId::new_v6()
            },
        };
        serialize(NLM_F_REQUEST | NLM_F_DUMP, sequence, request)
    }

    /// `request` as the bytes of one netlink message.
    fn serialize(flags: u16, sequence: u32, request: InetRequest) -> Vec<u8> {
        let mut header = NetlinkHeader::default();
        header.flags = flags;
        header.sequence_number = sequence;
        let mut message = NetlinkMessage::new(header, SockDiagMessage::InetRequest(request).into());
        message.finalize();
        let mut buffer = vec![0; message.buffer_len()];
        message.serialize(&mut buffer);
        buffer
    }

    /// One `SOCK_DIAG_BY_FAMILY` request for the socket whose own address is `local` (and whose
    /// peer is `remote`; without one, the listener a connection to `local` would reach).
    fn exact_request(local: SocketAddr, remote: Option<SocketAddr>, sequence: u32) -> Vec<u8> {
        let unspecified = |addr: &SocketAddr| match addr {
            SocketAddr::V4(_) => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
            SocketAddr::V6(_) => SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0),
        };
        let remote = remote.unwrap_or_else(|| unspecified(&local));
        let family = if local.is_ipv4() { AF_INET } else { AF_INET6 };
        let request = InetRequest {
            family,
            protocol: IPPROTO_TCP,
            extensions: ExtensionFlags::empty(),
            states: StateFlags::all(),
            socket_id: SocketId {
                source_port: local.port(),
                destination_port: remote.port(),
                source_address: local.ip(),
                destination_address: remote.ip(),
                interface_id: 0,
                // INET_DIAG_NOCOOKIE: match on the addresses alone.
                cookie: [0xff; 8],
            },
        };
        serialize(NLM_F_REQUEST, sequence, request)
    }

    /// The same question answered from `/proc/net/tcp` and `/proc/net/tcp6`.
    pub(super) fn proc_net_lookup(
        local: SocketAddr,
        remote: Option<SocketAddr>,
    ) -> io::Result<Option<SocketOwner>> {
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            if let Some(owner) = scan_table(table, local, remote)? {
                return Ok(Some(owner));
            }
        }
        Ok(None)
    }

    /// Whether `/proc/net/tcp` lists a socket (in any state) whose own address is `local` and
    /// whose peer is `remote`: tests wait on it for a closed connection to go.
    #[cfg(test)]
    pub(super) fn proc_net_has(local: SocketAddr, remote: SocketAddr) -> bool {
        let mut found = false;
        each_line("/proc/net/tcp", &mut |socket| {
            found = same(socket.own, local) && same(socket.peer, remote);
            if found {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
        found
    }

    /// `st` of a listening socket in `/proc/net/tcp`.
    const PROC_LISTEN: &str = "0A";

    /// `st` of an established connection in `/proc/net/tcp`.
    const PROC_ESTABLISHED: &str = "01";

    /// Calls `found` with every listener in `/proc/net/tcp` and `/proc/net/tcp6`.
    pub(super) fn proc_net_listening(
        found: &mut dyn FnMut(SocketAddr, SocketOwner),
    ) -> io::Result<()> {
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            each_line(table, &mut |socket| {
                if let (PROC_LISTEN, Some(owner)) = (socket.state, socket.owner) {
                    found(socket.own, owner);
                }
                ControlFlow::Continue(())
            })?;
        }
        Ok(())
    }

    fn scan_table(
        path: &str,
        local: SocketAddr,
        remote: Option<SocketAddr>,
    ) -> io::Result<Option<SocketOwner>> {
        let mut exact = None;
        let mut wildcard_listener = None;
        each_line(path, &mut |ProcSocket {
                                  own,
                                  peer,
                                  state,
                                  owner,
                              }| {
            match remote {
                // Only the established socket of exactly this pair, as for netlink.
                Some(remote)
                    if state == PROC_ESTABLISHED && same(own, local) && same(peer, remote) =>
                {
                    exact = Some(owner);
                    return ControlFlow::Break(());
                }
                None if state == PROC_LISTEN && own.port() == local.port() => {
                    if same(own, local) {
                        exact = Some(owner);
                        return ControlFlow::Break(());
                    }
                    if own.ip().is_unspecified() {
                        wildcard_listener = owner;
                    }
                }
                _ => {}
            }
            ControlFlow::Continue(())
        })?;
        Ok(exact.unwrap_or(wildcard_listener))
    }

    /// One line of `/proc/net/tcp{,6}`.
    struct ProcSocket<'a> {
        own: SocketAddr,
        peer: SocketAddr,
        /// `st`, in hex (`0A`: listening).
        state: &'a str,
        /// `None` when the uid or inode fields do not parse.
        owner: Option<SocketOwner>,
    }

    /// Calls `line` with each socket of the table at `path` until it breaks; nothing when the
    /// table does not exist (no IPv6).
    fn each_line(
        path: &str,
        line: &mut dyn FnMut(ProcSocket<'_>) -> ControlFlow<()>,
    ) -> io::Result<()> {
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(error) => return Err(error),
        };
        let mut reader = io::BufReader::new(file.take(PROC_NET_MAX_BYTES + 1));
        let mut text = String::new();
        let mut read = 0u64;
        while {
            text.clear();
            reader.read_line(&mut text)? > 0
        } {
            read += text.len() as u64;
            if read > PROC_NET_MAX_BYTES {
                return Err(io::Error::other("the socket table is too large to check"));
            }
            let fields: Vec<&str> = text.split_ascii_whitespace().collect();
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
            let [_, own, peer, state, _, _, _, uid, _, inode, ..] = fields[..] else {
                continue;
            };
            let (Some(own), Some(peer)) = (parse_proc_addr(own), parse_proc_addr(peer)) else {
                continue;
            };
            let owner = || -> Option<SocketOwner> {
                Some(SocketOwner {
                    uid: uid.parse().ok()?,
                    inode: inode.parse().ok()?,
                })
            };
            let socket = ProcSocket {
                own,
                peer,
                state,
                owner: owner(),
            };
            if line(socket).is_break() {
                break;
            }
        }
        Ok(())
    }

    /// Equal, treating an IPv4-mapped IPv6 address as the IPv4 address it maps.
    fn same(a: SocketAddr, b: SocketAddr) -> bool {
        super::canonical(a) == super::canonical(b)
    }

    /// `0100007F:1F90` (IPv4) or 32 hex digits `:PORT` (IPv6): each 32-bit word in host order.
    fn parse_proc_addr(field: &str) -> Option<SocketAddr> {
        let (ip, port) = field.split_once(':')?;
        let port = u16::from_str_radix(port, 16).ok()?;
        let word = |hex: &str| u32::from_str_radix(hex, 16).ok().map(u32::to_ne_bytes);
        let ip = match ip.len() {
            8 => IpAddr::V4(Ipv4Addr::from(word(ip)?)),
            32 => {
                let mut bytes = [0u8; 16];
                for (i, chunk) in bytes.chunks_mut(4).enumerate() {
                    chunk.copy_from_slice(&word(ip.get(i * 8..i * 8 + 8)?)?);
                }
                IpAddr::V6(Ipv6Addr::from(bytes))
            }
            _ => return None,
        };
        Some(SocketAddr::new(ip, port))
    }

    pub(super) fn process_holds_socket(pid: u32, inode: u64) -> bool {
        let wanted = format!("socket:[{inode}]");
        let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            return false;
        };
        entries.take(MAX_FDS_SCANNED).flatten().any(|entry| {
            std::fs::read_link(entry.path())
                .is_ok_and(|target| target.as_os_str() == wanted.as_str())
        })
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn proc_net_addresses_parse_in_host_order() {
            assert_eq!(
                parse_proc_addr("0100007F:1F90"),
                Some("127.0.0.1:8080".parse().unwrap())
            );
            assert_eq!(
                parse_proc_addr("00000000000000000000000001000000:0016"),
                Some("[::1]:22".parse().unwrap())
            );
            assert_eq!(
                parse_proc_addr("0000000000000000FFFF00000100007F:0050"),
                Some("[::ffff:127.0.0.1]:80".parse().unwrap())
            );
            assert_eq!(parse_proc_addr("zz:1"), None);
        }

        #[test]
        fn a_mapped_address_is_the_address_it_maps() {
            assert!(same(
                "[::ffff:127.0.0.1]:80".parse().unwrap(),
                "127.0.0.1:80".parse().unwrap()
            ));
            assert!(!same(
                "127.0.0.1:80".parse().unwrap(),
                "127.0.0.1:81".parse().unwrap()
            ));
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// Both ways of asking (netlink and /proc) find this process's own connection and listener,
    /// with this process's uid and the listener's real inode.
    #[test]
    fn netlink_and_proc_agree_on_our_own_sockets() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let listen_addr = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(listen_addr).unwrap();
        let client_addr = client.local_addr().unwrap();

        let mut table = SocketTable::new();
        assert!(table.diag.is_some(), "sock_diag is available on Linux");
        let via_netlink = table.connection(client_addr, listen_addr).unwrap().unwrap();
        assert_eq!(via_netlink.uid, own_uid());
        let listener_owner = table.listener(listen_addr).unwrap().unwrap();
        assert_eq!(listener_owner.uid, own_uid());
        assert!(process_holds_socket(std::process::id(), listener_owner.inode).unwrap());

        let via_proc = linux::proc_net_lookup(client_addr, Some(listen_addr))
            .unwrap()
            .unwrap();
        assert_eq!(via_proc, via_netlink);
        let listener_via_proc = linux::proc_net_lookup(listen_addr, None).unwrap().unwrap();
        assert_eq!(listener_via_proc, listener_owner);

        // The accepted end, before and after accept: same uid, inode 0 until it has a file.
        let queued = table.connection(listen_addr, client_addr).unwrap().unwrap();
        assert_eq!((queued.uid, queued.inode), (own_uid(), 0));
        let (_accepted, _) = listener.accept().unwrap();
        let accepted = table.connection(listen_addr, client_addr).unwrap().unwrap();
        assert_eq!(accepted.uid, own_uid());
        assert_ne!(accepted.inode, 0);
    }

    /// A client whose socket is IPv6 (dual-stack, connecting to `::ffff:127.0.0.1`) still shows
    /// up under the IPv4 addresses the proxy sees it by.
    #[test]
    fn a_dual_stack_client_is_found_by_its_ipv4_addresses() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let client = std::net::TcpStream::connect(("::ffff:127.0.0.1", port)).unwrap();
        assert!(client.local_addr().unwrap().is_ipv6(), "an AF_INET6 socket");
        let (accepted, peer) = listener.accept().unwrap();
        assert!(peer.is_ipv4(), "the proxy sees IPv4 addresses");
        let local = accepted.local_addr().unwrap();
        let found = SocketTable::new().connection(peer, local).unwrap();
        assert_eq!(found.map(|o| o.uid), Some(own_uid()));
        let from_proc = linux::proc_net_lookup(peer, Some(local)).unwrap();
        assert_eq!(from_proc.map(|o| o.uid), Some(own_uid()));
    }

    /// A runtime that listens on `[::1]` is checked the same way.
    #[test]
    fn ipv6_loopback_sockets_have_owners_too() {
        let Ok(listener) = std::net::TcpListener::bind("[::1]:0") else {
            eprintln!("skipping: no IPv6 loopback here");
            return;
        };
        let addr = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(addr).unwrap();
        let mut table = SocketTable::new();
        let runtime_end = table
            .connection(addr, client.local_addr().unwrap())
            .unwrap();
        assert_eq!(runtime_end.map(|o| o.uid), Some(own_uid()));
        let listening = table.listener(addr).unwrap().unwrap();
        assert!(process_holds_socket(std::process::id(), listening.inode).unwrap());
        assert_eq!(linux::proc_net_lookup(addr, None).unwrap(), Some(listening));
    }

    /// One dump of every listener answers what one query per address answers, from netlink
    /// and from /proc alike: an IPv4 and an IPv6 listener by their own addresses, a wildcard
    /// listener for a loopback address on its port, and nothing for a port no one listens on.
    #[test]
    fn the_listener_table_answers_as_the_queries_do() {
        let v4 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let v4_addr = v4.local_addr().unwrap();
        let any = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
        let via_any: SocketAddr = ([127, 0, 0, 1], any.local_addr().unwrap().port()).into();
        let v6 = std::net::TcpListener::bind("[::1]:0").ok();
        // Bound but not listening: no other test can take the port while this one looks.
        let unlistened = tokio::net::TcpSocket::new_v4().unwrap();
        unlistened.bind(([127, 0, 0, 1], 0).into()).unwrap();
        let closed = unlistened.local_addr().unwrap();

        let mut table = SocketTable::new();
        let from_netlink = table.listening().unwrap();
        assert!(table.diag.is_some(), "the dump went through netlink");
        let from_proc = SocketTable::listening_from_proc().unwrap();
        let mut addresses = vec![v4_addr, via_any];
        addresses.extend(v6.as_ref().map(|l| l.local_addr().unwrap()));
        for addr in addresses {
            let queried = table.listener(addr).unwrap().unwrap();
            assert_eq!(
                from_netlink.listener(addr),
                Some(queried),
                "{addr} via netlink"
            );
            assert_eq!(from_proc.listener(addr), Some(queried), "{addr} via /proc");
            assert_eq!(queried.uid, own_uid());
            assert!(process_holds_socket(std::process::id(), queried.inode).unwrap());
        }
        let mapped: SocketAddr = format!("[::ffff:127.0.0.1]:{}", v4_addr.port())
            .parse()
            .unwrap();
        assert_eq!(
            from_netlink.listener(mapped),
            from_netlink.listener(v4_addr)
        );
        assert_eq!(table.listener(closed).unwrap(), None);
        assert_eq!(from_netlink.listener(closed), None);
        assert_eq!(from_proc.listener(closed), None);
    }

    /// A dump that the kernel sends in many parts (a few hundred listeners each) is read to its
    /// end: every one of 800 listeners is in the table.
    #[test]
    fn a_dump_of_many_parts_is_read_whole() {
        let many: Vec<_> = (0..800)
            .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
            .collect();
        let listeners = SocketTable::new().listening().unwrap();
        let missing = many
            .iter()
            .filter(|l| listeners.listener(l.local_addr().unwrap()).is_none())
            .count();
        assert_eq!(missing, 0, "of {} listeners", many.len());
    }

    /// The wildcard of one family does not stand in for the other: `0.0.0.0` is not reached
    /// by a connection to `[::1]`, while a dual-stack `::` listener is reached over IPv4.
    #[test]
    fn a_wildcard_listener_stands_in_only_where_the_kernel_would_route() {
        let owner = |inode| SocketOwner { uid: 1000, inode };
        let mut listeners = Listeners::default();
        listeners.add("0.0.0.0:8000".parse().unwrap(), owner(1));
        listeners.add("[::]:9000".parse().unwrap(), owner(2));
        listeners.add("127.0.0.1:9000".parse().unwrap(), owner(3));
        let at = |addr: &str| listeners.listener(addr.parse().unwrap()).map(|o| o.inode);
        assert_eq!(at("127.0.0.1:8000"), Some(1));
        assert_eq!(at("[::1]:8000"), None);
        assert_eq!(at("127.0.0.1:9000"), Some(3), "the exact listener first");
        assert_eq!(
            at("127.0.0.2:9000"),
            Some(2),
            "then the dual-stack wildcard"
        );
        assert_eq!(at("[::1]:9000"), Some(2));
        assert_eq!(at("127.0.0.1:7000"), None);
    }

    /// Issue 29: once a connection is gone, asking for its exact address pair finds nothing,
    /// via netlink and /proc alike, although the kernel would answer such a query with the
    /// listener still at the same address (and name the listener's owner as the connection's).
    #[test]
    fn a_vanished_connection_is_not_answered_by_the_listener_at_its_address() {
        use std::io::Read;

        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let listen_addr = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(listen_addr).unwrap();
        let client_addr = client.local_addr().unwrap();
        let (mut accepted, _) = listener.accept().unwrap();
        let mut table = SocketTable::new();
        let live = table.connection(listen_addr, client_addr).unwrap();
        assert_eq!(live.map(|o| o.uid), Some(own_uid()), "the live connection");

        // The client closes first (its end waits in TIME_WAIT); the accepted end reads the
        // end of stream and closes too, so no socket of the accepted end's pair is left.
        drop(client);
        let mut byte = [0u8; 1];
        assert_eq!(accepted.read(&mut byte).unwrap(), 0);
        drop(accepted);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while linux::proc_net_has(listen_addr, client_addr) {
            assert!(
                std::time::Instant::now() < deadline,
                "the socket never closed"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(table.diag.is_some(), "asked through netlink");
        assert_eq!(table.connection(listen_addr, client_addr).unwrap(), None);
        assert_eq!(
            linux::proc_net_lookup(listen_addr, Some(client_addr)).unwrap(),
            None
        );
        // The listener is still there, for its own query.
        assert!(table.listener(listen_addr).unwrap().is_some());
        // And the client's TIME_WAIT remnant is no connection either.
        assert_eq!(table.connection(client_addr, listen_addr).unwrap(), None);
    }

    #[test]
    fn a_closed_socket_has_no_owner() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let mut table = SocketTable::new();
        assert_eq!(table.listener(addr).unwrap(), None);
        assert_eq!(linux::proc_net_lookup(addr, None).unwrap(), None);
    }
}
