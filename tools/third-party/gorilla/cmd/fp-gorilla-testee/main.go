// fp-gorilla-testee: a frameproof testee (spec/testee.md, harness version 2) around
// github.com/gorilla/websocket. It answers the websocket `serve` request by running the library's
// own server Conn (Upgrader.Upgrade, then the echo loop of internal/echo, the same code as
// fp-gorilla-server) over an in-memory net.Conn. `decode`, `encode` and `match` are answered
// `skipped`: gorilla exposes no frame layer (frames are read and written only inside Conn, as
// messages), so there is nothing to call without re-implementing frames.
//
// What the glue adds, and why (nothing it adds is judged by the suite as gorilla's behaviour beyond
// the error's name and offset):
//   - The error's requirement ID comes from gorilla's error (its protocol-error message lists every
//     fault of a frame's first two bytes; the glue names the first in spec/websocket.md §14 order).
//   - The error's offset is where the offending frame starts. gorilla does not say; the glue finds the
//     byte on which gorilla failed (it feeds that session again, the failing chunk one byte at a time)
//     and the start of the frame holding it, from a walk over the input's frame lengths that checks
//     nothing.
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/gorilla/websocket"
	"google.golang.org/protobuf/proto"

	"frameproof.local/third-party/gorilla/internal/codecjson"
	"frameproof.local/third-party/gorilla/internal/echo"
	pb "frameproof.local/third-party/gorilla/internal/testeepb"
)

const noFrameLayer = "gorilla/websocket exposes no frame layer (frames are read and written only inside Conn, " +
	"as messages): only `serve` can run the library's own code"

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(in, hdr[:]); err != nil {
			if err == io.EOF {
				return
			}
			fmt.Fprintln(os.Stderr, "fp-gorilla-testee: reading request:", err)
			os.Exit(1)
		}
		body := make([]byte, binary.LittleEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(in, body); err != nil {
			fmt.Fprintln(os.Stderr, "fp-gorilla-testee: request body:", err)
			os.Exit(1)
		}
		req := &pb.TesteeRequest{}
		var resp *pb.TesteeResponse
		if err := proto.Unmarshal(body, req); err != nil {
			resp = &pb.TesteeResponse{Result: &pb.TesteeResponse_RuntimeError{RuntimeError: err.Error()}}
		} else {
			resp = handle(req)
		}
		b, err := proto.Marshal(resp)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fp-gorilla-testee:", err)
			os.Exit(1)
		}
		binary.LittleEndian.PutUint32(hdr[:], uint32(len(b)))
		out.Write(hdr[:])
		out.Write(b)
		if err := out.Flush(); err != nil {
			os.Exit(1)
		}
	}
}

func skipped(why string) *pb.TesteeResponse {
	return &pb.TesteeResponse{Result: &pb.TesteeResponse_Skipped{Skipped: why}}
}

func handle(req *pb.TesteeRequest) *pb.TesteeResponse {
	switch r := req.Request.(type) {
	case *pb.TesteeRequest_Hello:
		v := uint32(1)
		if r.Hello.GetMaxHarnessVersion() >= 2 {
			v = 2
		}
		return &pb.TesteeResponse{Result: &pb.TesteeResponse_Hello{Hello: &pb.HelloResponse{
			HarnessVersion: v, Name: "gorilla", Version: "gorilla/websocket v1.5.3",
			Protocols: []string{"websocket"}, Features: []string{"serve"},
		}}}
	case *pb.TesteeRequest_Serve:
		return serve(r.Serve)
	case *pb.TesteeRequest_Decode, *pb.TesteeRequest_Encode, *pb.TesteeRequest_Match:
		return skipped(noFrameLayer)
	default:
		return skipped("not offered by this testee")
	}
}

func limits(c *pb.Codec) (codecjson.Websocket, string) {
	if c.GetProtocol() != "websocket" {
		return codecjson.Websocket{}, fmt.Sprintf("protocol %q: this testee wraps a websocket library", c.GetProtocol())
	}
	w := codecjson.Websocket{MaxPayload: codecjson.DefaultMaxPayload, MaxMessage: codecjson.DefaultMaxMessage}
	if n := c.GetLimits().GetMaxPayload(); n != 0 {
		w.MaxPayload = n
	}
	if n := c.GetWebsocket().GetMaxMessage(); n != 0 {
		w.MaxMessage = n
	}
	return w, ""
}

// hijacker is the http.ResponseWriter Upgrader.Upgrade hijacks: it hands over the in-memory conn.
type hijacker struct {
	conn net.Conn
	h    http.Header
}

func (w *hijacker) Header() http.Header         { return w.h }
func (w *hijacker) Write(b []byte) (int, error) { return 0, errors.New("not an HTTP response") }
func (w *hijacker) WriteHeader(int)             {}
func (w *hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return w.conn, bufio.NewReadWriter(bufio.NewReaderSize(w.conn, 4096), bufio.NewWriterSize(w.conn, 4096)), nil
}

type session struct {
	mc  *memConn
	err error // what echo.Serve returned, once done
}

// start upgrades a fresh in-memory connection with gorilla's Upgrader (as fp-gorilla-server does) and
// runs the echo loop on it; the 101 answer is dropped (`serve` starts after the handshake).
func start(limit int64) (*session, error) {
	s := &session{mc: newMemConn()}
	up := websocket.Upgrader{Subprotocols: []string{"frameproof.echo"}, CheckOrigin: func(*http.Request) bool { return true }}
	r := &http.Request{Method: "GET", Host: "127.0.0.1", Header: http.Header{
		"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Sec-Websocket-Version": {"13"},
		"Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}}}
	c, err := up.Upgrade(&hijacker{conn: s.mc, h: http.Header{}}, r, nil)
	if err != nil {
		return nil, err
	}
	s.mc.take()
	go func() {
		s.err = echo.Serve(c, limit, nil)
		c.Close()
		s.mc.finished()
	}()
	return s, nil
}

func serve(req *pb.ServeRequest) *pb.TesteeResponse {
	if req.GetEndpoint() != "" && req.GetEndpoint() != "echo" {
		return skipped(fmt.Sprintf("websocket has no endpoint %q", req.GetEndpoint()))
	}
	cfg, why := limits(req.GetCodec())
	if why != "" {
		return skipped(why)
	}
	chunks := req.GetChunks()
	s, err := start(cfg.ReadLimit())
	if err != nil {
		return &pb.TesteeResponse{Result: &pb.TesteeResponse_RuntimeError{RuntimeError: "Upgrade: " + err.Error()}}
	}
	res := &pb.ServeResponse{}
	failedAt := -1 // the chunk on which the library closed
	for i, ch := range chunks {
		w, closed := s.mc.feed(ch, false)
		res.Written = append(res.Written, w)
		if closed {
			res.Closed, failedAt = true, i
			break
		}
	}
	if !res.Closed && req.GetHalfClose() {
		w, closed := s.mc.feed(nil, true)
		res.Written = append(res.Written, w)
		res.Closed = closed
	}
	if !res.Closed {
		s.mc.Close() // end of the session, not seen by the suite
		return &pb.TesteeResponse{Result: &pb.TesteeResponse_Serve{Serve: res}}
	}
	s.mc.mu.Lock()
	for !s.mc.done {
		s.mc.cond.Wait()
	}
	s.mc.mu.Unlock()
	if req, msg := classify(s.err); req != "" {
		pos := failedAt
		if failedAt >= 0 {
			pos = failingByte(cfg.ReadLimit(), chunks, failedAt)
		}
		var data []byte
		for _, ch := range chunks {
			data = append(data, ch...)
		}
		start, opcode := frameAt(data, pos)
		if req == "WS-LIM" { // gorilla has one limit, on messages: a continuation frame took it over
			req = "WS-LIM-1"
			if opcode == 0 {
				req = "WS-LIM-2"
			}
		}
		res.Error = &pb.ProtocolError{Requirement: req, Offset: uint64(start), Message: msg}
	}
	return &pb.TesteeResponse{Result: &pb.TesteeResponse_Serve{Serve: res}}
}

// failingByte feeds the session again, chunks before `k` whole and chunk k one byte at a time, and
// returns the stream index of the byte after which gorilla closed.
func failingByte(limit int64, chunks [][]byte, k int) int {
	s, err := start(limit)
	if err != nil {
		return -1
	}
	base := 0
	for i := 0; i < k; i++ {
		s.mc.feed(chunks[i], false)
		base += len(chunks[i])
	}
	for j := range chunks[k] {
		if _, closed := s.mc.feed(chunks[k][j:j+1], false); closed {
			return base + j
		}
	}
	s.mc.Close()
	return base + len(chunks[k]) - 1
}

// frameAt walks the frames of data by their lengths (2-byte header, 16/64-bit extended length, the
// 4-byte key when MASK is set, the payload; nothing is checked) and returns the start and opcode of
// the frame that holds byte pos.
func frameAt(data []byte, pos int) (int, byte) {
	at := 0
	for at < len(data) {
		if len(data)-at < 2 {
			return at, data[at] & 0x0f
		}
		n := uint64(data[at+1] & 0x7f)
		h := 2
		switch n {
		case 126:
			if len(data)-at < 4 {
				return at, data[at] & 0x0f
			}
			n, h = uint64(binary.BigEndian.Uint16(data[at+2:])), 4
		case 127:
			if len(data)-at < 10 {
				return at, data[at] & 0x0f
			}
			n, h = binary.BigEndian.Uint64(data[at+2:]), 10
		}
		if data[at+1]&0x80 != 0 {
			h += 4
		}
		end := uint64(at) + uint64(h) + n
		if uint64(pos) < end || end > uint64(len(data)) {
			return at, data[at] & 0x0f
		}
		at = int(end)
	}
	return at, 0
}

// gorilla's protocol-error messages (conn.go advanceFrame) and the requirement each breaks, in the order
// spec/websocket.md §14 judges a frame (gorilla lists every fault of the first two bytes at once).
var faults = []struct{ text, req string }{
	{"RSV1 set", "WS-HDR-2"}, {"RSV2 set", "WS-HDR-2"}, {"RSV3 set", "WS-HDR-2"},
	{"bad opcode", "WS-HDR-3"},
	{"FIN not set on control", "WS-CTL-1"},
	{"bad MASK", "WS-MASK-1"},
	{"len > 125 for control", "WS-CTL-2"},
	{"continuation after FIN", "WS-FRAG-2"},
	{"data before FIN", "WS-FRAG-3"},
	{"bad close code", "WS-CLOSE-2"},
	{"invalid utf8 payload in close frame", "WS-CLOSE-3"},
}

// classify names the requirement of the error echo.Serve ended with ("" for the ends that are no
// protocol error: the peer's close frame, its EOF, which gorilla reports alike inside a frame and
// between frames, as close 1006 "unexpected EOF").
func classify(err error) (string, string) {
	if err == nil {
		return "", ""
	}
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		return "", ""
	}
	if errors.Is(err, websocket.ErrReadLimit) {
		return "WS-LIM", err.Error()
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "websocket: "); ok {
		for _, f := range faults {
			if strings.Contains(rest, f.text) {
				return f.req, msg
			}
		}
	}
	return "UNCLASSIFIED", msg
}
