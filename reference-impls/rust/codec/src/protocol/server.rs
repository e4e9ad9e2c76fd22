//! A server endpoint: the session of one connection, and the echo session of the protocols
//! that answer frame by frame.

#[allow(unused_imports)]
use super::*;

/// What a server endpoint did with the input it was given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Served {
    /// Frames decoded, and the payload bytes they carried.
    pub frames: u64,
    pub bytes: u64,
    /// The endpoint closed the connection (after writing its last replies).
    pub closed: bool,
    /// Why, if the input broke a requirement.
    pub error: Option<ProtocolError>,
}

/// A server session's decoder (with the receive buffer) and whether the session has closed.
#[derive(Debug)]
pub struct Decoding<D> {
    pub(crate) dec: D,
    pub(crate) closed: bool,
}

impl<D: FrameDecoder> Decoding<D> {
    pub(crate) fn new(dec: D) -> Self {
        Decoding { dec, closed: false }
    }

    /// Appends received bytes to the decoder, unless the session has closed.
    pub(crate) fn extend(&mut self, data: &[u8]) {
        if !self.closed {
            self.dec.extend(data);
        }
    }

    /// Closes the session, with the error `e` if the input broke a requirement.
    pub(crate) fn close(&mut self, s: &mut Served, e: Option<ProtocolError>) {
        self.closed = true;
        s.closed = true;
        s.error = e;
    }
}

/// The server side of one connection: bytes in, bytes out, closed or not, and the classified
/// error. The network server is a loop around it (read into [`ServerSession::buffer_mut`],
/// [`ServerSession::process`], write what it appended); the testee's `serve` drives it offline.
/// A session provides its [`Decoding`] and [`ServerSession::process_open`]; the rest defaults
/// to their bookkeeping.
pub trait ServerSession {
    type Decoder: FrameDecoder;

    /// The session's decoder and whether it has closed.
    fn io(&self) -> &Decoding<Self::Decoder>;

    fn io_mut(&mut self) -> &mut Decoding<Self::Decoder>;

    /// [`ServerSession::process`] on a session that is open: handles everything complete in
    /// the buffer, appends the replies to `out`, counts in `s`, and closes with
    /// [`Decoding::close`] where the input ends the session.
    fn process_open(&mut self, out: &mut BytesMut, s: &mut Served);

    /// The receive buffer, to read socket data straight into it.
    fn buffer_mut(&mut self) -> &mut BytesMut {
        self.io_mut().dec.buffer_mut()
    }

    /// Appends received bytes (ignored once the session is closed).
    fn extend(&mut self, data: &[u8]) {
        self.io_mut().extend(data);
    }

    /// Handles everything complete in the buffer; appends the replies to `out`.
    fn process(&mut self, out: &mut BytesMut) -> Served {
        let mut s = Served {
            closed: self.io().closed,
            ..Served::default()
        };
        if !s.closed {
            self.process_open(out, &mut s);
        }
        s
    }

    /// The peer's EOF: handles what is left, appends the last replies and closes, with the
    /// decoder's error if a frame is left unfinished.
    fn finish(&mut self, out: &mut BytesMut) -> Served {
        let mut s = self.process(out);
        if !s.closed {
            let e = self.io_mut().dec.finish().err();
            self.io_mut().close(&mut s, e);
        }
        s
    }

    /// Bytes held for what is unfinished (a partial handshake, frame or message), for the
    /// server's memory budget (`*-RES-1`). Default: the receive buffer's length.
    fn held(&mut self) -> usize {
        self.buffer_mut().len()
    }

    /// The memory behind [`held`](Self::held): the capacity of the buffers that hold it, which a
    /// buffer grown by doubling makes up to twice the bytes held. Default: the receive buffer's.
    fn footprint(&mut self) -> usize {
        self.buffer_mut().capacity()
    }

    /// Memory the session keeps between messages beyond its buffers (websocket with
    /// permessage-deflate: the compressor's and the inflater's state, `WSD-LIM-2`), counted in
    /// the server's memory budget on top of [`held`](Self::held). Default: none.
    fn state_cost(&mut self) -> usize {
        0
    }

    /// Whether the session still waits for its opening handshake (websocket): the idle
    /// timeout then bounds the handshake from the accept on (`WS-RES-3`).
    fn awaiting_opening(&self) -> bool {
        false
    }
}

/// A protocol whose server answers each decoded frame on its own (or not at all): the echo
/// services of `standard` and `length-field`. [`EchoSession`] is its server session.
pub trait Echo: Protocol {
    /// Appends the reply to `frame`, if it gets one.
    fn reply(&self, frame: &Self::Frame, out: &mut BytesMut);

    /// Answers the complete, valid frames at the front of `dec`'s buffer where they lie (none is
    /// taken out of the buffer as a frame of its own: no reference count, no allocation) and
    /// drops their bytes at once; returns (frames, payload bytes). Stops before anything else
    /// (an unfinished or invalid frame), which [`FrameDecoder::decode`] then reports. The same
    /// replies as [`Echo::reply`] on each decoded frame; the default answers none this way.
    fn reply_in_place(
        &self,
        _dec: &mut Self::Decoder,
        _out: &mut BytesMut,
        _sink: bool,
    ) -> (u64, u64) {
        (0, 0)
    }
}

/// The server session of an [`Echo`] protocol: every complete frame is answered as soon as it
/// is decoded; a decoding error closes after the replies to the frames before it; at EOF the
/// session closes, with the decoder's truncation error if a frame was left unfinished.
#[derive(Debug)]
pub struct EchoSession<P: Echo> {
    proto: P,
    io: Decoding<P::Decoder>,
    sink: bool,
}

impl<P: Echo> EchoSession<P> {
    pub fn new(proto: P, sink: bool) -> Self {
        EchoSession {
            io: Decoding::new(proto.decoder()),
            proto,
            sink,
        }
    }

    /// The session of `endpoint` (an echo protocol has only the default one, `""`).
    pub fn of_endpoint(proto: &P, endpoint: &str, sink: bool) -> Result<Self, ConfigError> {
        match endpoint {
            "" => Ok(EchoSession::new(proto.clone(), sink)),
            other => Err(ConfigError::Unsupported(format!(
                "{} has no endpoint {other:?}",
                P::NAME
            ))),
        }
    }
}

impl<P: Echo> ServerSession for EchoSession<P> {
    type Decoder = P::Decoder;

    fn process_open(&mut self, out: &mut BytesMut, s: &mut Served) {
        loop {
            let (frames, bytes) = self.proto.reply_in_place(&mut self.io.dec, out, self.sink);
            s.frames += frames;
            s.bytes += bytes;
            match self.io.dec.decode() {
                Ok(Some(f)) => {
                    s.frames += 1;
                    s.bytes += P::payload(&f).len() as u64;
                    if !self.sink {
                        self.proto.reply(&f, out);
                    }
                }
                Ok(None) => return,
                Err(e) => return self.io.close(s, Some(e)),
            }
        }
    }

    fn io(&self) -> &Decoding<P::Decoder> {
        &self.io
    }

    fn io_mut(&mut self) -> &mut Decoding<P::Decoder> {
        &mut self.io
    }
}
