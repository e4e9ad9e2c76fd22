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

/// The server side of one connection: bytes in, bytes out, closed or not, and the classified
/// error. The network server is a loop around it (read into [`ServerSession::buffer_mut`],
/// [`ServerSession::process`], write what it appended); the testee's `serve` drives it offline.
pub trait ServerSession {
    /// The receive buffer, to read socket data straight into it.
    fn buffer_mut(&mut self) -> &mut BytesMut;

    /// Appends received bytes (ignored once the session is closed).
    fn extend(&mut self, data: &[u8]);

    /// Handles everything complete in the buffer; appends the replies to `out`.
    fn process(&mut self, out: &mut BytesMut) -> Served;

    /// The peer's EOF: handles what is left, appends the last replies and closes.
    fn finish(&mut self, out: &mut BytesMut) -> Served;

    fn is_closed(&self) -> bool;

    /// Bytes held for what is unfinished (a partial handshake, frame or message), for the
    /// server's memory budget (`*-RES-1`). Default: the receive buffer's length.
    fn held(&mut self) -> usize {
        self.buffer_mut().len()
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
    dec: P::Decoder,
    sink: bool,
    closed: bool,
}

impl<P: Echo> EchoSession<P> {
    pub fn new(proto: P, sink: bool) -> Self {
        EchoSession {
            dec: proto.decoder(),
            proto,
            sink,
            closed: false,
        }
    }
}

impl<P: Echo> ServerSession for EchoSession<P> {
    fn buffer_mut(&mut self) -> &mut BytesMut {
        self.dec.buffer_mut()
    }

    fn extend(&mut self, data: &[u8]) {
        if !self.closed {
            self.dec.extend(data);
        }
    }

    fn process(&mut self, out: &mut BytesMut) -> Served {
        let mut s = Served::default();
        if self.closed {
            s.closed = true;
            return s;
        }
        loop {
            let (frames, bytes) = self.proto.reply_in_place(&mut self.dec, out, self.sink);
            s.frames += frames;
            s.bytes += bytes;
            match self.dec.decode() {
                Ok(Some(f)) => {
                    s.frames += 1;
                    s.bytes += P::payload(&f).len() as u64;
                    if !self.sink {
                        self.proto.reply(&f, out);
                    }
                }
                Ok(None) => return s,
                Err(e) => {
                    self.closed = true;
                    s.closed = true;
                    s.error = Some(e);
                    return s;
                }
            }
        }
    }

    fn finish(&mut self, out: &mut BytesMut) -> Served {
        let mut s = self.process(out);
        if !s.closed {
            s.error = self.dec.finish().err();
            s.closed = true;
            self.closed = true;
        }
        s
    }

    fn is_closed(&self) -> bool {
        self.closed
    }
}
